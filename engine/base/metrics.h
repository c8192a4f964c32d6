// The process's counters for the Prometheus endpoint (CARAVAN_METRICS_PORT,
// metrics_server.h): lock-free, so the data path pays one relaxed atomic
// add per event whether or not anyone reads them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace caravan::metrics {

struct Counter {
  std::atomic<uint64_t> value{0};
  void add(uint64_t n = 1) { value.fetch_add(n, std::memory_order_relaxed); }
};

// Seconds, in Prometheus's cumulative buckets (100 µs to 60 s).
struct Histogram {
  static constexpr std::array<double, 12> kBounds = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2,
                                                     0.1,  0.3,  1,    3,    10,   60};
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets{};  // the last: +Inf
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum_ns{0};
  void observe(double seconds);
};

struct Registry {
  // Worker: finished push_pulls (and broadcasts), their bytes, their time
  // from submission to completion.
  Counter operations, operation_bytes;
  Histogram operation_seconds;
  // Worker: bytes of sums the van wrote straight into the tensor (van ABI
  // 2.1, lend), which the engine then did not copy.
  Counter in_place_bytes;
  // Server: pushes received and their bytes, rounds summed, sums sent.
  Counter server_pushes, server_push_bytes, server_rounds, server_answer_bytes;
  // Every node's data messages over the van.
  Counter messages_sent, bytes_sent, messages_received, bytes_received;
  // PS_RESEND: messages sent again; peers found lost (heartbeats, the van).
  Counter resends, peers_lost;
};

Registry& registry();

// The Prometheus text format (version 0.0.4) of every metric, each series
// labelled node="<label>".
std::string render(const std::string& node_label);

}  // namespace caravan::metrics
