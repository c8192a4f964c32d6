#include "engine/capi/telemetry.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/base/log.h"

namespace caravan {
namespace {

// Samples kept at most, whatever the window: a bound on memory for jobs of
// many small tensors (about 40 bytes each).
constexpr size_t kMaxSamples = size_t{1} << 20;

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

}  // namespace

Telemetry::Telemetry(double window_s, bool log_lines)
    : window_(window_s),
      log_lines_(log_lines),
      next_line_(started_ + std::chrono::duration_cast<Clock::duration>(window_)) {}

void Telemetry::forget_before(Clock::time_point t) {
  while (!samples_.empty() && (samples_.front().finished < t || samples_.size() > kMaxSamples))
    samples_.pop_front();
}

void Telemetry::record(const std::string& tensor, size_t bytes, Clock::time_point submitted,
                       Clock::time_point finished) {
  std::string line;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string* name = &*names_.insert(tensor).first;
    samples_.push_back(
        Sample{finished, std::chrono::duration<double>(finished - submitted).count(), bytes, name});
    forget_before(finished - std::chrono::duration_cast<Clock::duration>(window_));
    if (log_lines_ && finished >= next_line_) {
      Stats s = stats_locked(nullptr, finished);
      next_line_ = finished + std::chrono::duration_cast<Clock::duration>(window_);
      char text[256];
      std::snprintf(text, sizeof text,
                    "telemetry: push_pull %.1f MB/s over the last %.1f s: %llu operations, "
                    "%llu bytes; latency p50 %.0f us, p90 %.0f us, p99 %.0f us",
                    s.mbytes_per_s, s.window_s, static_cast<unsigned long long>(s.operations),
                    static_cast<unsigned long long>(s.bytes), s.p50_us, s.p90_us, s.p99_us);
      line = text;
    }
  }
  // Asked for with BYTEPS_TELEMETRY_ON=1: shown whatever the log level.
  if (!line.empty()) LogLine(CARAVAN_LOG_INFO) << line;
}

Telemetry::Stats Telemetry::stats(const std::string& tensor) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (tensor.empty()) return stats_locked(nullptr, Clock::now());
  auto it = names_.find(tensor);
  if (it == names_.end()) {
    Stats none;
    none.window_s =
        std::min(window_.count(), std::chrono::duration<double>(Clock::now() - started_).count());
    return none;
  }
  return stats_locked(&*it, Clock::now());
}

Telemetry::Stats Telemetry::stats_locked(const std::string* tensor, Clock::time_point now) const {
  Stats s;
  // A job younger than the window: its figures cover its life so far.
  s.window_s = std::min(window_.count(), std::chrono::duration<double>(now - started_).count());
  auto since = now - std::chrono::duration_cast<Clock::duration>(window_);
  std::vector<double> latencies;
  for (const Sample& x : samples_) {
    if (x.finished < since || (tensor && x.tensor != tensor)) continue;
    ++s.operations;
    s.bytes += x.bytes;
    latencies.push_back(x.seconds * 1e6);
  }
  std::sort(latencies.begin(), latencies.end());
  s.p50_us = percentile(latencies, 50);
  s.p90_us = percentile(latencies, 90);
  s.p99_us = percentile(latencies, 99);
  if (s.window_s > 0) s.mbytes_per_s = static_cast<double>(s.bytes) / s.window_s / 1e6;
  return s;
}

}  // namespace caravan
