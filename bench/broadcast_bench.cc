// caravan-broadcast-bench: caravan_broadcast against the way BytePS
// broadcasts (every worker but the root zeroes its tensor, then all
// push_pull the sum), and a plain push_pull of the same size, measured in
// the same run, every result checked element by element.
// Run it as every worker of a job:
//   caravan-launch --workers 2 --servers 1 -- caravan-broadcast-bench [--size 100M] [--iters N]
#include <caravan/caravan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char kUsage[] =
    "usage: caravan-launch [...] -- caravan-broadcast-bench [options]\n"
    "  --size BYTES   tensor size, K/M/G suffixes (default 100M)\n"
    "  --iters N      timed rounds of each method (default 5)\n"
    "  --warmup N     untimed rounds of each method (default 1)\n";

size_t ParseBytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string suffix = end ? end : "";
  double scale = suffix == "K"    ? 1e3
                 : suffix == "M"  ? 1e6
                 : suffix == "G"  ? 1e9
                 : suffix.empty() ? 1
                                  : -1;
  if (end == s.c_str() || scale < 0 || v <= 0) {
    std::fprintf(stderr, "caravan-broadcast-bench: --size '%s' is not a size like 100M\n",
                 s.c_str());
    std::exit(2);
  }
  return static_cast<size_t>(v * scale);
}

long ParseCount(const char* opt, const std::string& s, long min) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < min) {
    std::fprintf(stderr, "caravan-broadcast-bench: %s '%s' is not an integer >= %ld\n", opt,
                 s.c_str(), min);
    std::exit(2);
  }
  return v;
}

void Check(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "caravan-broadcast-bench: %s: %s\n", what, caravan_strerror(rc));
  std::exit(1);
}

// The root's values: distinct per element and round, exact in float32.
float RootValue(size_t i, long round) {
  return static_cast<float>((i * 7 + round * 13) % 4093) - 2000.f;
}

void ExpectRoots(const std::vector<float>& v, long round, const char* method, int rank) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != RootValue(i, round)) {
      std::fprintf(stderr,
                   "caravan-broadcast-bench: worker %d, %s round %ld: element %zu is %g, "
                   "the root's is %g\n",
                   rank, method, round, i, v[i], RootValue(i, round));
      std::exit(1);
    }
  }
}

using Clock = std::chrono::steady_clock;

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 100000000;
  long iters = 5, warmup = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "caravan-broadcast-bench: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--size")
      bytes = ParseBytes(value());
    else if (a == "--iters")
      iters = ParseCount("--iters", value(), 1);
    else if (a == "--warmup")
      warmup = ParseCount("--warmup", value(), 0);
    else if (a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "caravan-broadcast-bench: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  Check(caravan_init(), "caravan_init");
  const int rank = caravan_rank(), size = caravan_size();
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  std::vector<float> t(count);
  auto fill = [&](long round) {
    for (size_t i = 0; i < count; ++i) t[i] = RootValue(i, round);
  };

  struct Method {
    const char* name;
    const char* tensor;
    double best_s = 1e30, total_s = 0;
  } methods[] = {{"caravan_broadcast", "bench.broadcast"},
                 {"BytePS: zeros + push_pull", "bench.zeros_push_pull"},
                 {"push_pull (for scale)", "bench.push_pull"}};
  for (long round = 0; round < warmup + iters; ++round) {
    for (int m = 0; m < 3; ++m) {
      // Every worker's tensor holds garbage for a broadcast's non-roots.
      if (rank == 0 || m == 2)
        fill(round);
      else
        std::fill(t.begin(), t.end(), -1.f);
      auto start = Clock::now();
      if (m == 0) {
        Check(caravan_broadcast(methods[m].tensor, t.data(), count, CARAVAN_FLOAT32, 0, 0),
              "broadcast");
      } else {
        // BytePS's broadcast_parameters: non-roots zero, everyone sums.
        if (m == 1 && rank != 0) std::memset(t.data(), 0, count * sizeof(float));
        Check(caravan_push_pull(methods[m].tensor, t.data(), count, CARAVAN_FLOAT32, 0),
              "push_pull");
      }
      double s = std::chrono::duration<double>(Clock::now() - start).count();
      if (m < 2) {
        ExpectRoots(t, round, methods[m].name, rank);
      } else {
        for (size_t i = 0; i < count; i += 4099) {
          if (t[i] != RootValue(i, round) * static_cast<float>(size)) {
            std::fprintf(stderr, "caravan-broadcast-bench: worker %d push_pull element %zu wrong\n",
                         rank, i);
            return 1;
          }
        }
      }
      if (round >= warmup) {
        methods[m].best_s = std::min(methods[m].best_s, s);
        methods[m].total_s += s;
      }
    }
  }
  if (rank == 0) {
    std::printf("%d workers, %zu bytes float32, %ld timed rounds each (root: worker 0)\n", size,
                count * sizeof(float), iters);
    std::printf("%-28s %12s %12s %10s %14s\n", "method", "mean", "best ms", "GB/s", "vs broadcast");
    double bcast = methods[0].total_s / iters;
    for (auto& m : methods) {
      double mean = m.total_s / iters;
      std::printf("%-28s %9.1f ms %9.1f ms %10.2f %13.2fx\n", m.name, mean * 1e3, m.best_s * 1e3,
                  count * sizeof(float) / mean / 1e9, mean / bcast);
    }
    std::printf("broadcast speed-up over BytePS's zeros + push_pull: %.2fx (mean of %ld rounds)\n",
                methods[1].total_s / methods[0].total_s, iters);
  }
  Check(caravan_shutdown(), "caravan_shutdown");
  return 0;
}
