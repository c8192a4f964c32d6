// caravan-replay-bench: a training step replayed. Every step push_pulls
// every gradient tensor of a real model (bench/model_layers.h, float32), in
// backward order with BytePS priorities, and waits for all of them; in the
// same run the same bytes go as one tensor, the baseline the step is
// compared with. Every sum is checked element by element.
// --compress key=value,... declares every tensor with those compression
// parameters (docs/compression.md): the values are then gradient-like, the
// results only checked to be finite, and the table adds the bytes this
// host's interfaces sent per step (on loopback: every node of the job's).
// Run it as every worker of a job:
//   caravan-launch --workers 2 --servers 2 -- caravan-replay-bench [options]
#include <caravan/caravan.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "compression_args.h"
#include "model_layers.h"
#include "plot.h"

namespace {

const char kUsage[] =
    "usage: caravan-launch [...] -- caravan-replay-bench [--model resnet50|bert-large]\n"
    "                                  [--steps N] [--warmup N] [--plot FILE.png]\n"
    "                                  [--compress key=value,...]\n";

struct Options {
  std::string model = "resnet50";
  int steps = 10, warmup = 2;
  std::string plot;  // --plot FILE.png: the step against the single tensor, as bars
  caravan_bench::Compression compress;
};

void Must(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "caravan-replay-bench: worker %d: %s failed: %s\n", caravan_rank(), what,
               caravan_strerror(rc));
  std::exit(1);
}

int IntArg(const char* opt, const char* v) {
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (!*v || *end || n < 0 || n > 100000) {
    std::fprintf(stderr, "caravan-replay-bench: %s '%s' is not a count from 0 to 100000\n", opt, v);
    std::exit(2);
  }
  return static_cast<int>(n);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "caravan-replay-bench: '%s' needs a value\n%s", a.c_str(), kUsage);
      std::exit(2);
    }
    if (a == "--model")
      o.model = argv[++i];
    else if (a == "--steps")
      o.steps = IntArg("--steps", argv[++i]);
    else if (a == "--warmup")
      o.warmup = IntArg("--warmup", argv[++i]);
    else if (a == "--plot")
      o.plot = argv[++i];
    else if (a == "--compress")
      o.compress = caravan_bench::parse_compress("caravan-replay-bench", argv[++i]);
    else {
      std::fprintf(stderr, "caravan-replay-bench: unknown option '%s'\n%s", a.c_str(), kUsage);
      std::exit(2);
    }
  }
  if (o.model != "resnet50" && o.model != "bert-large") {
    std::fprintf(stderr, "caravan-replay-bench: --model '%s' is not resnet50 or bert-large\n",
                 o.model.c_str());
    std::exit(2);
  }
  if (o.steps < 1) {
    std::fprintf(stderr, "caravan-replay-bench: --steps must be at least 1\n");
    std::exit(2);
  }
  return o;
}

// Worker r contributes (r + 1 + step % 3) everywhere: small integers, so
// every float32 sum is exact.
float Contribution(int rank, int step) { return static_cast<float>(rank + 1 + step % 3); }

void Fill(std::vector<float>& v, int rank, int step) {
  std::fill(v.begin(), v.end(), Contribution(rank, step));
}

void Check(const std::vector<float>& v, const std::string& name, int workers, int step,
           bool compressed) {
  if (compressed) {  // an approximation of the sum: finite is what can be checked
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) {
        std::fprintf(stderr, "caravan-replay-bench: worker %d step %d: %s[%zu] = %g\n",
                     caravan_rank(), step, name.c_str(), i, v[i]);
        std::exit(1);
      }
    return;
  }
  float want = 0;
  for (int r = 0; r < workers; ++r) want += Contribution(r, step);
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != want) {
      std::fprintf(stderr, "caravan-replay-bench: worker %d step %d: %s[%zu] = %g, expected %g\n",
                   caravan_rank(), step, name.c_str(), i, v[i], want);
      std::exit(1);
    }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  auto layers = o.model == "resnet50" ? caravan::models::resnet50() : caravan::models::bert_large();
  Must(caravan_init(), "caravan_init");
  int rank = caravan_rank(), workers = caravan_size();
  size_t total = caravan::models::total_elements(layers);
  std::vector<std::vector<float>> grads;
  for (auto& l : layers) grads.emplace_back(l.elements);
  std::vector<float> whole(total);
  std::vector<caravan_handle> handles(layers.size());
  std::vector<double> step_s, whole_s, sent_bytes;
  const bool compressed = o.compress.on();
  if (compressed) {
    for (auto& l : layers)
      Must(caravan_bench::declare(o.compress, l.name), "caravan_declare_tensor");
    Must(caravan_bench::declare(o.compress, "whole-model"), "caravan_declare_tensor");
  }
  std::vector<size_t> sizes;
  for (auto& l : layers) sizes.push_back(l.elements);
  sizes.push_back(total);
  const caravan_bench::GradientSource source(compressed ? sizes : std::vector<size_t>{}, rank);
  // Tensor `index` (layers.size(): the whole model) for this step.
  auto fill = [&](std::vector<float>& v, size_t index, int step) {
    if (compressed)
      source.fill(index, v.data());
    else
      Fill(v, rank, step);
  };
  using Clock = std::chrono::steady_clock;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    for (size_t i = 0; i < grads.size(); ++i) fill(grads[i], i, step);
    uint64_t sent0 = caravan_bench::host_sent_bytes();
    auto t0 = Clock::now();
    // Backward order; as in BytePS, layers nearer the input get higher
    // priority since the next forward pass needs them first.
    for (size_t i = 0; i < layers.size(); ++i)
      Must(caravan_push_pull_async(layers[i].name.c_str(), grads[i].data(), grads[i].size(),
                                   CARAVAN_FLOAT32, static_cast<int>(i), &handles[i]),
           "caravan_push_pull_async");
    for (auto& h : handles) Must(caravan_wait(h), "caravan_wait");
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    double sent = static_cast<double>(caravan_bench::host_sent_bytes() - sent0);
    for (size_t i = 0; i < layers.size(); ++i)
      Check(grads[i], layers[i].name, workers, step, compressed);

    fill(whole, layers.size(), step);
    t0 = Clock::now();
    Must(caravan_push_pull("whole-model", whole.data(), whole.size(), CARAVAN_FLOAT32, 0),
         "caravan_push_pull");
    double w = std::chrono::duration<double>(Clock::now() - t0).count();
    Check(whole, "whole-model", workers, step, compressed);
    if (step >= o.warmup) {
      step_s.push_back(s);
      whole_s.push_back(w);
      sent_bytes.push_back(sent);
    }
    // Progress, for the long runs (bert-large, slow links).
    if (rank == 0 && o.warmup + o.steps >= 10)
      std::fprintf(stderr, "caravan-replay-bench: step %d of %d: %.1f ms\n", step + 1,
                   o.warmup + o.steps, s * 1e3);
  }
  Must(caravan_shutdown(), "caravan_shutdown");
  if (rank != 0) return 0;
  double bytes = static_cast<double>(total) * sizeof(float);
  double step = Median(step_s), single = Median(whole_s);
  std::printf(
      "caravan-replay-bench: %s, %zu tensors, %zu float32 values (%.1f MB), %d workers, "
      "%d steps (median), compression: %s\n",
      o.model.c_str(), layers.size(), total, bytes / 1e6, workers, o.steps,
      o.compress.label().c_str());
  std::printf("%-26s %12s %14s\n", "", "time ms", "algbw GB/s");
  std::printf("%-26s %12.1f %14.3f\n", "training step (all tensors)", step * 1e3,
              bytes / step / 1e9);
  std::printf("%-26s %12.1f %14.3f\n", "one tensor, same bytes", single * 1e3,
              bytes / single / 1e9);
  std::printf("step bandwidth / single-tensor bandwidth: %.2f\n", single / step);
  std::printf("bytes this host sent per step: %.2f MB (%.3f of the gradients' bytes)\n",
              Median(sent_bytes) / 1e6, Median(sent_bytes) / bytes);
  if (!o.plot.empty()) {
    std::string why = caravan_bench::plot_bars(
        o.plot,
        "caravan-replay-bench: " + o.model + ", " + std::to_string(workers) +
            " workers, median of " + std::to_string(o.steps) + " steps",
        "milliseconds",
        {{"training step (" + std::to_string(layers.size()) + " tensors)", step * 1e3},
         {"one tensor, same bytes", single * 1e3}});
    if (!why.empty()) {
      std::fprintf(stderr, "caravan-replay-bench: --plot %s: %s\n", o.plot.c_str(), why.c_str());
      return 1;
    }
    std::printf("chart: %s\n", o.plot.c_str());
  }
  return 0;
}
