// Raw single-stream TCP throughput over one host address, the yardstick the
// push_pull bandwidth is compared against.
#ifndef CARAVAN_BENCH_TCP_BASELINE_H
#define CARAVAN_BENCH_TCP_BASELINE_H

#include <string>

namespace caravan_bench {

// Streams data from a sender thread to this thread over one TCP connection
// to `host` for about `seconds`. Returns GB/s (1e9 bytes), or a negative
// value with *error set.
double MeasureTcpStream(const std::string& host, double seconds, std::string* error);

}  // namespace caravan_bench

#endif  // CARAVAN_BENCH_TCP_BASELINE_H
