// push_pull telemetry (caravan_get_pushpull_stats, BYTEPS_TELEMETRY_ON): every
// finished push_pull's tensor, bytes and time from submission to completion,
// kept for a window of recent time, from which throughput and latency
// percentiles come, per tensor and in all. With BYTEPS_TELEMETRY_ON=1 a line
// with them is logged every window, whatever BYTEPS_LOG_LEVEL says.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_set>

namespace caravan {

class Telemetry {
 public:
  using Clock = std::chrono::steady_clock;

  struct Stats {
    double window_s = 0;  // the span the figures cover
    uint64_t operations = 0;
    uint64_t bytes = 0;
    double mbytes_per_s = 0;  // bytes / window_s / 1e6
    double p50_us = 0, p90_us = 0, p99_us = 0;
  };

  // `window_s`: how far back the figures reach (CARAVAN_TELEMETRY_WINDOW_S);
  // `log_lines`: BYTEPS_TELEMETRY_ON=1.
  Telemetry(double window_s, bool log_lines);

  // One finished push_pull. Thread-safe.
  void record(const std::string& tensor, size_t bytes, Clock::time_point submitted,
              Clock::time_point finished);
  // The last window's figures for `tensor`, or for every tensor when empty.
  Stats stats(const std::string& tensor) const;

 private:
  struct Sample {
    Clock::time_point finished;
    double seconds;
    size_t bytes;
    const std::string* tensor;  // interned in names_
  };
  Stats stats_locked(const std::string* tensor, Clock::time_point now) const;
  void forget_before(Clock::time_point t);

  const std::chrono::duration<double> window_;
  const bool log_lines_;
  const Clock::time_point started_ = Clock::now();
  mutable std::mutex mu_;
  std::unordered_set<std::string> names_;
  std::deque<Sample> samples_;  // oldest first
  Clock::time_point next_line_;
};

}  // namespace caravan
