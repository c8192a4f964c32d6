// The workloads of the emulated-cluster benchmark (bench/cluster/run.sh),
// shared by its Caravan worker and its Gloo ring baseline so both move the
// same bytes and check the same sums: one tensor of a given size, or a
// model's gradient set (bench/model_layers.h) in backward order.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "../model_layers.h"

namespace cluster_bench {

// What each step does with the workload: an allreduce (push_pull), or,
// for a workload named rsNM or agNM, a reduce-scatter or an allgather of
// one tensor of N MiB in one equal shard a rank (C API 1.4), or for a2aNM
// an all-to-all of N MiB in one equal block a rank (C API 1.7).
enum class Collective { kAllreduce, kReduceScatter, kAllgather, kAlltoall };

struct Options {
  std::string
      workload;  // "4M", "64M" (MiB, one tensor), "resnet50", "bert-large", "rs64M", "a2a64M"
  Collective collective = Collective::kAllreduce;
  int iters = 5, warmup = 1;
  // --aligned 1: every step starts once all ranks are ready (a barrier,
  // outside the timed part), so the figures leave out the ranks' own skew.
  bool aligned = false;
  std::vector<caravan::models::Layer> layers;
};

inline const char* kWorkloads =
    "4M, 64M or any N M (one float32 tensor of N MiB), resnet50, bert-large; rsNM, agNM and a2aNM: "
    "a reduce-scatter, an allgather or an all-to-all of N MiB";

[[noreturn]] inline void usage_error(const char* prog, const std::string& why) {
  std::fprintf(stderr, "%s: %s\nusage: %s --workload W [--iters N] [--warmup N] ...\n  W: %s\n",
               prog, why.c_str(), prog, kWorkloads);
  std::exit(2);
}

inline int count_arg(const char* prog, const std::string& opt, const char* v) {
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (!*v || *end || n < 0 || n > 100000)
    usage_error(prog, opt + " '" + v + "' is not a count from 0 to 100000");
  return static_cast<int>(n);
}

// The tensors of a workload, largest index = first produced by backward.
inline std::vector<caravan::models::Layer> workload_layers(const char* prog, const std::string& w) {
  if (w == "resnet50") return caravan::models::resnet50();
  if (w == "bert-large") return caravan::models::bert_large();
  char* end = nullptr;
  long mib = std::strtol(w.c_str(), &end, 10);
  if (w.empty() || mib < 1 || mib > 4096 || std::string(end) != "M")
    usage_error(prog, "--workload '" + w + "' is not one of: " + kWorkloads);
  return {{"tensor-" + w, static_cast<size_t>(mib) * 1024 * 1024 / sizeof(float)}};
}

// Parses the options both programs share; `extra` takes the others (it is
// given the option and its value and returns false for an unknown one).
template <typename Extra>
Options parse(const char* prog, int argc, char** argv, Extra extra) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage_error(prog, "'" + a + "' needs a value");
    const char* v = argv[++i];
    if (a == "--workload")
      o.workload = v;
    else if (a == "--iters")
      o.iters = count_arg(prog, a, v);
    else if (a == "--warmup")
      o.warmup = count_arg(prog, a, v);
    else if (a == "--aligned")
      o.aligned = count_arg(prog, a, v) != 0;
    else if (!extra(a, v))
      usage_error(prog, "unknown option '" + a + "'");
  }
  if (o.workload.empty()) usage_error(prog, "--workload is required");
  if (o.iters < 1) usage_error(prog, "--iters must be at least 1");
  std::string tensor = o.workload;
  if (tensor.rfind("rs", 0) == 0 || tensor.rfind("ag", 0) == 0 || tensor.rfind("a2a", 0) == 0) {
    o.collective = tensor[0] == 'r'   ? Collective::kReduceScatter
                   : tensor[1] == 'g' ? Collective::kAllgather
                                      : Collective::kAlltoall;
    tensor = tensor.substr(o.collective == Collective::kAlltoall ? 3 : 2);
    if (tensor == "resnet50" || tensor == "bert-large")
      usage_error(prog, "--workload '" + o.workload + "': shard one tensor (rsNM, agNM, a2aNM)");
  }
  o.layers = workload_layers(prog, tensor);
  return o;
}

// Worker r contributes (r + 1 + iteration % 3) everywhere: small integers,
// so every float32 sum is exact whatever order the additions happen in.
inline float contribution(int rank, int iter) { return static_cast<float>(rank + 1 + iter % 3); }

inline void fill(float* v, size_t n, int rank, int iter) {
  std::fill(v, v + n, contribution(rank, iter));
}

// Exits 1 naming the tensor and element when a sum is wrong.
inline void check(const char* prog, const float* v, size_t n, const std::string& name, int rank,
                  int workers, int iter) {
  float want = 0;
  for (int r = 0; r < workers; ++r) want += contribution(r, iter);
  for (size_t i = 0; i < n; ++i)
    if (v[i] != want) {
      std::fprintf(stderr, "%s: rank %d iteration %d: %s[%zu] = %g, expected %g\n", prog, rank,
                   iter, name.c_str(), i, v[i], want);
      std::exit(1);
    }
}

// A reduce-scatter or allgather step's values: rank r's shard of the
// tensor (n elements, `workers` equal shards).
struct Shard {
  size_t begin, end;
};
inline Shard shard_of(size_t n, int rank, int workers) {
  size_t each = n / static_cast<size_t>(workers);
  return {each * static_cast<size_t>(rank), each * static_cast<size_t>(rank + 1)};
}

// An all-to-all's block from rank `from` to rank `to`: exact in float32.
inline float block_value(int from, int to, int iter) {
  return static_cast<float>(from * 1024 + to) + static_cast<float>(iter % 3) * 1048576.0f;
}

// Before a step: an allreduce's and a reduce-scatter's every element is the
// rank's contribution; an allgather's own shard is, the rest a value no
// rank contributes; an all-to-all's block r (of what it sends) is its
// block_value for rank r.
inline void fill_for(Collective c, float* v, size_t n, int rank, int workers, int iter) {
  if (c == Collective::kAlltoall) {
    for (int r = 0; r < workers; ++r) {
      Shard s = shard_of(n, r, workers);
      std::fill(v + s.begin, v + s.end, block_value(rank, r, iter));
    }
    return;
  }
  if (c != Collective::kAllgather) return fill(v, n, rank, iter);
  std::fill(v, v + n, -1.0f);
  Shard s = shard_of(n, rank, workers);
  std::fill(v + s.begin, v + s.end, contribution(rank, iter));
}

// After a step: an allreduce's every element is the sum, a reduce-scatter's
// own shard; each shard of an allgather is its rank's contribution; block
// r of an all-to-all's result (`v`: what it received) rank r's for this one.
inline void check_for(Collective c, const char* prog, const float* v, size_t n,
                      const std::string& name, int rank, int workers, int iter) {
  if (c == Collective::kAllreduce) return check(prog, v, n, name, rank, workers, iter);
  for (int r = 0; r < workers; ++r) {
    if (c == Collective::kReduceScatter && r != rank) continue;
    Shard s = shard_of(n, r, workers);
    float want = c == Collective::kAlltoall ? block_value(r, rank, iter) : contribution(r, iter);
    if (c == Collective::kReduceScatter) {
      want = 0;
      for (int w = 0; w < workers; ++w) want += contribution(w, iter);
    }
    for (size_t i = s.begin; i < s.end; ++i)
      if (v[i] != want) {
        std::fprintf(stderr, "%s: rank %d iteration %d: %s[%zu] (shard %d) = %g, expected %g\n",
                     prog, rank, iter, name.c_str(), i, r, v[i], want);
        std::exit(1);
      }
  }
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The timed steps' span on the wall clock, for run.sh --cpu (whose sampler
// reads every process's CPU from outside), and the CPU this thread spent
// filling and checking tensors in it, which is not communication.
struct Window {
  double start = 0, end = 0, prep_cpu_s = 0;
  static double wall() {
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
  static double thread_cpu() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  }
};

// The line run.sh reads: one per run, from rank 0.
inline void print_result(const char* system, const Options& o, int workers, double bytes,
                         const std::vector<double>& seconds, const Window& window) {
  double med = median(seconds);
  double best = *std::min_element(seconds.begin(), seconds.end());
  std::printf(
      "cluster-bench result: system=%s workload=%s workers=%d tensors=%zu bytes=%.0f "
      "iters=%zu median_s=%.6f best_s=%.6f MBps=%.2f window_start=%.6f window_end=%.6f "
      "prep_cpu_s=%.6f\n",
      system, o.workload.c_str(), workers, o.layers.size(), bytes, seconds.size(), med, best,
      bytes / med / 1e6, window.start, window.end, window.prep_cpu_s);
  std::fflush(stdout);
}

}  // namespace cluster_bench
