// caravan-compressor-bench: every compressor plugin the build made
// (CARAVAN_COMPRESSOR_TARGETS), one core, on one partition of gradient-like
// float32 values: compress (a worker's push) and decompress (a worker's
// pull) throughput in bytes of float32 input per second, against memcpy of
// the same bytes measured in the same run, and the bytes on the wire.
//   caravan-compressor-bench [--mib N] [--reps N]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "caravan/plugin/compressor_v1.h"
#include "compression_args.h"
#include "compressor_bench_plugins.h"  // generated: CARAVAN_BENCH_COMPRESSOR_PATHS

namespace {

// Parameters that make each built-in valid, as a user would set them.
std::vector<caravan_compressor_param_v1> params_for(const std::string& name) {
  if (name == "onebit") return {{"byteps_compressor_onebit_scaling", "true"}};
  if (name == "topk" || name == "randomk") return {{"byteps_compressor_k", "0.01"}};
  if (name == "dithering") return {{"byteps_compressor_k", "8"}};
  return {};
}

template <class F>
double best_seconds(int reps, F&& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "caravan-compressor-bench: %s\n", why.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 16;
  int reps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mib")
      mib = std::strtoul(argv[i + 1], nullptr, 10);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else
      fail("unknown option " + a + " (--mib N, --reps N)");
  }
  if (mib < 1 || reps < 1) fail("--mib and --reps must be at least 1");
  const size_t n = mib * 1024 * 1024 / sizeof(float), bytes = n * sizeof(float);
  std::vector<float> grad(n), out(n), copy(n);
  caravan_bench::fill_gradient(grad.data(), n, 0, 0);
  // The yardstick: one core copying the same bytes, caches as cold as the
  // compressors find them.
  double memcpy_s = best_seconds(reps, [&] { std::memcpy(copy.data(), grad.data(), bytes); });
  double memcpy_bw = bytes / memcpy_s;
  std::printf(
      "caravan-compressor-bench: one partition of %zu float32 (%zu MiB), best of %d, one core\n", n,
      mib, reps);
  std::printf("memcpy: %.2f GB/s\n", memcpy_bw / 1e9);
  std::printf("%-10s %10s %12s %14s %14s %16s\n", "compressor", "wire/fp32", "compress GB/s",
              "decompress GB/s", "both GB/s", "both / memcpy");
  for (const char* path : {CARAVAN_BENCH_COMPRESSOR_PATHS}) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) fail(std::string("dlopen ") + path + ": " + dlerror());
    auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(h, CARAVAN_PLUGIN_ENTRY_SYMBOL));
    if (!entry) fail(std::string(path) + " has no entry symbol");
    const caravan_plugin_descriptor* d = entry();
    auto* ops = static_cast<const caravan_compressor_ops_v1*>(d->ops);
    caravan_host_v1 host{};
    host.struct_size = sizeof host;
    void *ctx = nullptr, *state = nullptr;
    size_t max_bytes = 0, len = 0;
    auto params = params_for(d->name);
    if (ops->init(&host, &ctx) != CARAVAN_STATUS_OK ||
        ops->create(ctx, params.data(), params.size(), CARAVAN_FLOAT32, n, &state, &max_bytes) !=
            CARAVAN_STATUS_OK)
      fail(std::string("compressor ") + d->name + " would not start");
    std::vector<char> wire(max_bytes);
    uint64_t seed = 1;
    double c = best_seconds(reps, [&] {
      if (ops->compress(ctx, state, grad.data(), wire.data(), &len, ++seed,
                        CARAVAN_COMPRESSOR_PUSH) != CARAVAN_STATUS_OK)
        fail(std::string(d->name) + ": compress failed");
    });
    double dc = best_seconds(reps, [&] {
      if (ops->decompress(ctx, state, wire.data(), len, out.data(), 0, seed,
                          CARAVAN_COMPRESSOR_PUSH) != CARAVAN_STATUS_OK)
        fail(std::string(d->name) + ": decompress failed");
    });
    double both = bytes / (c + dc);
    std::printf("%-10s %10.4f %12.2f %14.2f %14.2f %16.2f\n", d->name,
                static_cast<double>(len) / bytes, bytes / c / 1e9, bytes / dc / 1e9, both / 1e9,
                both / memcpy_bw);
    ops->destroy(ctx, state);
    ops->finalize(ctx);
  }
  return 0;
}
