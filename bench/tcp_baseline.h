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

// Round trips of `bytes` over one TCP connection to `host`: send them to an
// echoing thread and read them back, for about `seconds` (at least 5
// rounds). What push_pull does at the socket level with no framework around
// it. Returns bytes / round time in GB/s, or a negative value with *error;
// the median round trip in microseconds goes to *p50_us when given.
double MeasureTcpPingPong(const std::string& host, size_t bytes, double seconds, std::string* error,
                          double* p50_us = nullptr);

// As MeasureTcpPingPong, but each round's `bytes` go in pieces of `piece`
// bytes that the echoing thread returns as each arrives, while later pieces
// are still being sent: push and pull of one round overlap, as pipelined
// partitions let them. The best a pipelined push_pull could do over raw
// sockets, with no summing and no copy out. GB/s, or negative with *error.
double MeasureTcpPipelinedEcho(const std::string& host, size_t bytes, size_t piece, double seconds,
                               std::string* error);

}  // namespace caravan_bench

#endif  // CARAVAN_BENCH_TCP_BASELINE_H
