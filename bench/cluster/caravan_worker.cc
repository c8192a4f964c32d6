// caravan-cluster-worker: the Caravan side of the emulated-cluster benchmark
// (bench/cluster/run.sh). Each iteration push_pulls (or reduce-scatters,
// allgathers or all-to-alls: workload.h) every tensor of the workload, in backward order with
// BytePS priorities (layers nearer the input higher), waits for all, and checks every element; rank
// 0 prints the median step time. Run as every worker of a job.
// --compress key=value,... declares every tensor with those compression
// parameters (docs/compression.md): the values are then gradient-like and
// the results only checked to be finite.
#include <caravan/caravan.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../compression_args.h"
#include "workload.h"

namespace {

const char kProg[] = "caravan-cluster-worker";

void must(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "%s: worker %d: %s failed: %s\n", kProg, caravan_rank(), what,
               caravan_strerror(rc));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cluster_bench;
  caravan_bench::Compression compress;
  Options o = parse(kProg, argc, argv, [&](const std::string& opt, const char* v) {
    if (opt != "--compress") return false;
    compress = caravan_bench::parse_compress(kProg, v);
    return true;
  });
  must(caravan_init(), "caravan_init");
  int rank = caravan_rank(), workers = caravan_size();
  if (compress.on())
    for (auto& l : o.layers)
      must(caravan_bench::declare(compress, l.name), "caravan_declare_tensor");
  std::vector<std::vector<float>> grads, received;  // received: an all-to-all's results
  const bool alltoall = o.collective == Collective::kAlltoall;
  double bytes = 0;
  for (auto& l : o.layers) {
    grads.emplace_back(l.elements);
    if (alltoall) received.emplace_back(l.elements);
    bytes += static_cast<double>(l.elements) * sizeof(float);
  }
  std::vector<size_t> sizes;
  for (auto& l : o.layers) sizes.push_back(l.elements);
  const caravan_bench::GradientSource source(compress.on() ? sizes : std::vector<size_t>{}, rank);
  std::vector<caravan_handle> handles(o.layers.size());
  std::vector<double> seconds;
  using Clock = std::chrono::steady_clock;
  Window window;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    if (it == o.warmup) window.start = Window::wall();
    double prep0 = Window::thread_cpu();
    for (size_t i = 0; i < grads.size(); ++i) {
      if (compress.on())
        source.fill(i, grads[i].data());
      else
        fill_for(o.collective, grads[i].data(), grads[i].size(), rank, workers, it);
    }
    if (it >= o.warmup) window.prep_cpu_s += Window::thread_cpu() - prep0;
    if (o.aligned) {
      float ready = 1;  // a one-element push_pull: every worker has arrived
      must(caravan_push_pull("cluster-bench/step-barrier", &ready, 1, CARAVAN_FLOAT32, 0),
           "caravan_push_pull (step barrier)");
    }
    auto t0 = Clock::now();
    for (size_t i = 0; i < o.layers.size(); ++i) {
      auto start = o.collective == Collective::kReduceScatter ? caravan_reduce_scatter_async
                   : o.collective == Collective::kAllgather   ? caravan_allgather_async
                                                              : caravan_push_pull_async;
      const char* name = o.layers[i].name.c_str();
      must(alltoall
               ? caravan_alltoall_async(name, grads[i].data(), received[i].data(), grads[i].size(),
                                        CARAVAN_FLOAT32, static_cast<int>(i), &handles[i])
               : start(name, grads[i].data(), grads[i].size(), CARAVAN_FLOAT32, static_cast<int>(i),
                       &handles[i]),
           "starting the step's operation");
    }
    for (auto& h : handles) must(caravan_wait(h), "caravan_wait");
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    prep0 = Window::thread_cpu();
    for (size_t i = 0; i < o.layers.size(); ++i) {
      if (!compress.on()) {
        check_for(o.collective, kProg, (alltoall ? received : grads)[i].data(), grads[i].size(),
                  o.layers[i].name, rank, workers, it);
        continue;
      }
      for (float v : grads[i])  // an approximation of the sum: finite is what can be checked
        if (!std::isfinite(v)) {
          std::fprintf(stderr, "%s: rank %d: %s holds %g\n", kProg, rank, o.layers[i].name.c_str(),
                       v);
          return 1;
        }
    }
    if (it >= o.warmup) {
      window.prep_cpu_s += Window::thread_cpu() - prep0;
      seconds.push_back(s);
    }
  }
  window.end = Window::wall();
  must(caravan_shutdown(), "caravan_shutdown");
  if (rank == 0)
    print_result(compress.on() ? ("caravan+" + compress.label()).c_str() : "caravan", o, workers,
                 bytes, seconds, window);
  return 0;
}
