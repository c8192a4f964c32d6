// Gloo's ring allreduce among the job's workers, measured in the same run as
// push_pull: the yardstick a PyTorch user compares with, since torch's gloo
// backend runs this algorithm on CPU tensors. Built where Debian's
// libgloo-dev is (CARAVAN_BENCH_GLOO); elsewhere connect() says so.
#ifndef CARAVAN_BENCH_GLOO_BASELINE_H
#define CARAVAN_BENCH_GLOO_BASELINE_H

#include <cstddef>
#include <memory>
#include <string>

namespace caravan_bench {

class GlooRing {
 public:
  virtual ~GlooRing() = default;
  // Connects the job's `size` workers over TCP on `host` (this worker's
  // address), meeting through files in `store_dir`, a directory every worker
  // reads and writes. nullptr with *error set where that fails or Gloo is absent.
  static std::unique_ptr<GlooRing> connect(int rank, int size, const std::string& host,
                                           const std::string& store_dir, int timeout_s,
                                           std::string* error);
  // Sums `bytes` of float32 over the workers `rounds` times after `warmup`,
  // one allreduce at a time, every result checked. GB/s as caravan-bench
  // counts a push_pull's (bytes / round time), or negative with *error; the
  // median round in microseconds goes to *p50_us.
  virtual double measure(size_t bytes, long rounds, long warmup, double* p50_us,
                         std::string* error) = 0;
};

}  // namespace caravan_bench

#endif  // CARAVAN_BENCH_GLOO_BASELINE_H
