// caravan-reducer-bench: the in-place sum (dst += src) of every reducer
// plugin the build made, per variant, dtype and size, next to a compiler-
// vectorised loop and memcpy. Throughput counts bytes read plus written:
// 3 x n x elem for dst += src, 2 x n for memcpy. After the Google Benchmark
// run, a summary times the cases behind the project's targets again.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_v1.h"
#include "reducer_bench_baseline.h"
#include "reducer_bench_plugins.h"  // generated: CARAVAN_BENCH_REDUCER_PATHS

#ifdef CARAVAN_BENCH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace caravan::bench {
namespace {

constexpr size_t kMinBytes = size_t{4} << 10;
constexpr size_t kMaxBytes = size_t{256} << 20;

// ---- Plugins ------------------------------------------------------------------

struct Host {
  std::map<std::string, std::string> params;
  std::string error;
  caravan_host_v1 table{};

  explicit Host(std::map<std::string, std::string> p) : params(std::move(p)) {
    table.struct_size = sizeof table;
    table.host_ctx = this;
    table.log = [](void*, caravan_log_level, const char*) {};
    table.get_param = [](void* c, const char* name) -> const char* {
      auto& m = static_cast<Host*>(c)->params;
      auto it = m.find(name);
      return it == m.end() ? nullptr : it->second.c_str();
    };
    table.get_env = [](void*, const char* name) -> const char* { return std::getenv(name); };
    table.set_error = [](void* c, const char* m) { static_cast<Host*>(c)->error = m ? m : ""; };
  }
};

// An instance kept for the whole run, so a thread pool is made only once.
struct Reducer {
  std::string label;
  const caravan_reducer_ops_v1* ops = nullptr;
  std::unique_ptr<Host> host;
  void* ctx = nullptr;
  bool device = false;
  std::string kernel;
};

const caravan_reducer_ops_v1* load(const std::string& path, std::string* why) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    *why = dlerror();
    return nullptr;
  }
  auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(lib, CARAVAN_PLUGIN_ENTRY_SYMBOL));
  const caravan_plugin_descriptor* d = entry ? entry() : nullptr;
  if (!d || d->magic != CARAVAN_PLUGIN_MAGIC || d->kind != CARAVAN_PLUGIN_KIND_REDUCER ||
      d->abi_major != CARAVAN_REDUCER_ABI_MAJOR_V1) {
    *why = "not a v1 reducer plugin";
    return nullptr;
  }
  return static_cast<const caravan_reducer_ops_v1*>(d->ops);
}

// NULL, with *why set, when the plugin cannot run here.
std::unique_ptr<Reducer> start(const caravan_reducer_ops_v1* ops, const std::string& label,
                               std::map<std::string, std::string> params, std::string* why) {
  auto r = std::make_unique<Reducer>();
  r->label = label;
  r->ops = ops;
  r->host = std::make_unique<Host>(std::move(params));
  if (ops->init(&r->host->table, &r->ctx) != CARAVAN_STATUS_OK) {
    *why = r->host->error;
    return nullptr;
  }
  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  ops->properties(r->ctx, &p);
  r->device = (p.caps & CARAVAN_REDUCER_CAP_DEVICE_MEMORY) != 0;
  r->kernel = p.kernel ? p.kernel : "?";
#ifndef CARAVAN_BENCH_CUDA
  if (r->device) {
    *why = "it works on GPU memory and this benchmark was built without CUDA";
    ops->finalize(r->ctx);
    return nullptr;
  }
#endif
  return r;
}

std::vector<std::unique_ptr<Reducer>> start_all() {
  static const char* const kPaths[] = {CARAVAN_BENCH_REDUCER_PATHS nullptr};
  std::vector<std::unique_ptr<Reducer>> out;
  for (const char* const* p = kPaths; *p; ++p) {
    std::string path = *p, why;
    std::string name = path.substr(path.rfind("reducer-") + 8);
    name = name.substr(0, name.find('.'));
    const caravan_reducer_ops_v1* ops = load(path, &why);
    std::vector<std::pair<std::string, std::map<std::string, std::string>>> variants;
    if (name == "cpu") {
      for (const char* kernel : {"auto", "avx2", "portable"})
        for (const char* threads : {"1", "2"})
          variants.push_back(
              {name + "_" + kernel + "_t" + threads, {{"KERNEL", kernel}, {"THREADS", threads}}});
    } else {
      variants.push_back({name, {}});
    }
    for (auto& [label, params] : variants) {
      std::unique_ptr<Reducer> r = ops ? start(ops, label, params, &why) : nullptr;
      if (r)
        out.push_back(std::move(r));
      else
        std::printf("%s: not benchmarked: %s\n", label.c_str(), why.c_str());
    }
  }
  return out;
}

// ---- Memory -----------------------------------------------------------------------

// Two arrays of the largest size, shared by every case and touched once up
// front, so no case pays for page faults. 0x3c bytes are normal numbers of
// every float type that only grow under repeated sums: no subnormal assists.
struct Arrays {
  void* dst = nullptr;
  void* src = nullptr;
};

Arrays host_arrays() {
  static Arrays a = [] {
    Arrays x{std::aligned_alloc(64, kMaxBytes), std::aligned_alloc(64, kMaxBytes)};
    if (!x.dst || !x.src) {
      std::fprintf(stderr, "out of memory for two %zu-byte arrays\n", kMaxBytes);
      std::exit(1);
    }
    std::memset(x.dst, 0x3c, kMaxBytes);
    std::memset(x.src, 0x3c, kMaxBytes);
    return x;
  }();
  return a;
}

#ifdef CARAVAN_BENCH_CUDA
Arrays device_arrays() {
  static Arrays a = [] {
    Arrays x;
    if (cudaMalloc(&x.dst, kMaxBytes) != cudaSuccess ||
        cudaMalloc(&x.src, kMaxBytes) != cudaSuccess) {
      std::fprintf(stderr, "cudaMalloc of two %zu-byte arrays failed\n", kMaxBytes);
      std::exit(1);
    }
    cudaMemset(x.dst, 0x3c, kMaxBytes);
    cudaMemset(x.src, 0x3c, kMaxBytes);
    cudaDeviceSynchronize();
    return x;
  }();
  return a;
}
#endif

// One dst += src call, waiting for the work to end; false on failure.
bool sum_once(Reducer& r, caravan_dtype dt, size_t bytes) {
#ifdef CARAVAN_BENCH_CUDA
  Arrays a = r.device ? device_arrays() : host_arrays();
#else
  Arrays a = host_arrays();
#endif
  if (r.ops->sum(r.ctx, a.dst, a.src, bytes / caravan_dtype_size(dt), dt, nullptr) !=
      CARAVAN_STATUS_OK)
    return false;
#ifdef CARAVAN_BENCH_CUDA
  if (r.device) return cudaStreamSynchronize(nullptr) == cudaSuccess;
#endif
  return true;
}

// ---- Cases --------------------------------------------------------------------------

void register_all(const std::vector<std::unique_ptr<Reducer>>& reducers) {
  auto sizes = [](benchmark::internal::Benchmark* b) {
    b->RangeMultiplier(4)->Range(kMinBytes, kMaxBytes)->UseRealTime();
  };
  for (const auto& r : reducers)
    for (int d = 0; d < CARAVAN_DTYPE_COUNT; ++d) {
      auto dt = static_cast<caravan_dtype>(d);
      Reducer* rp = r.get();
      std::string name = "sum/" + r->label + "/" + caravan_dtype_name(d);
      sizes(benchmark::RegisterBenchmark(name.c_str(), [rp, dt](benchmark::State& st) {
        size_t bytes = static_cast<size_t>(st.range(0));
        for (auto _ : st)
          if (!sum_once(*rp, dt, bytes)) {
            st.SkipWithError(rp->host->error.c_str());
            break;
          }
        st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * 3 * bytes));
      }));
    }
  using Loop = void (*)(float*, const float*, size_t);
  for (auto [name, loop] :
       {std::pair<std::string, Loop>{"loop_default", add_f32_default},
        {std::string("loop_clones_") + add_f32_clones_target(), add_f32_clones}})
    sizes(benchmark::RegisterBenchmark(
        ("baseline/" + name + "/float32").c_str(), [loop](benchmark::State& st) {
          size_t bytes = static_cast<size_t>(st.range(0));
          Arrays a = host_arrays();
          for (auto _ : st) {
            loop(static_cast<float*>(a.dst), static_cast<const float*>(a.src), bytes / 4);
            benchmark::ClobberMemory();
          }
          st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * 3 * bytes));
        }));
  sizes(benchmark::RegisterBenchmark("baseline/memcpy", [](benchmark::State& st) {
    size_t bytes = static_cast<size_t>(st.range(0));
    Arrays a = host_arrays();
    for (auto _ : st) {
      std::memcpy(a.dst, a.src, bytes);
      benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * 2 * bytes));
  }));
}

// ---- The summary ------------------------------------------------------------------------

// Bytes/s of `call` moving `bytes` per call: the median of several timed
// calls after a warm-up, which copes with a noisy machine better than a mean.
double rate(const std::function<void()>& call, double bytes) {
  call();
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return bytes / seconds[seconds.size() / 2];
}

void summary(const std::vector<std::unique_ptr<Reducer>>& reducers) {
  Reducer* one = nullptr;
  Reducer* two = nullptr;
  for (const auto& r : reducers) {
    if (r->label == "cpu_auto_t1") one = r.get();
    if (r->label == "cpu_auto_t2") two = r.get();
  }
  if (!one || !two) {
    std::printf("summary: the cpu reducer did not start\n");
    return;
  }
  const size_t b = kMaxBytes;
  auto sum_rate = [&](Reducer* r, caravan_dtype dt) {
    return rate([&] { sum_once(*r, dt, b); }, 3.0 * b);
  };
  Arrays a = host_arrays();
  double f32 = sum_rate(one, CARAVAN_FLOAT32);
  double f32_two = sum_rate(two, CARAVAN_FLOAT32);
  double f16 = sum_rate(one, CARAVAN_FLOAT16);
  double bf16 = sum_rate(one, CARAVAN_BFLOAT16);
  double loop = rate(
      [&] { add_f32_clones(static_cast<float*>(a.dst), static_cast<const float*>(a.src), b / 4); },
      3.0 * b);
  double loop_sse2 = rate(
      [&] { add_f32_default(static_cast<float*>(a.dst), static_cast<const float*>(a.src), b / 4); },
      3.0 * b);
  double copy = rate([&] { std::memcpy(a.dst, a.src, b); }, 2.0 * b);
  auto line = [](const std::string& what, double r, const char* ratio_name, double ratio) {
    std::printf("  %-38s %7.2f GB/s", what.c_str(), r / 1e9);
    if (ratio_name) std::printf("   %-18s %.2f", ratio_name, ratio);
    std::printf("\n");
  };
  std::printf(
      "\nSummary: 256 MiB arrays, in-place sum, median of 7; GB/s = (bytes read + written) / s\n");
  line("cpu (kernel " + one->kernel + ") float32, 1 thread", f32, nullptr, 0);
  line(std::string("a[i] += b[i] loop (") + add_f32_clones_target() + " clone)", loop, "cpu / loop",
       f32 / loop);
  line("a[i] += b[i] loop (build's target)", loop_sse2, "cpu / loop", f32 / loop_sse2);
  line("cpu float32, 2 threads", f32_two, "2 / 1 threads", f32_two / f32);
  line("cpu float16, 1 thread", f16, "float16 / float32", f16 / f32);
  line("cpu bfloat16, 1 thread", bf16, "bfloat16 / float32", bf16 / f32);
  line("memcpy", copy, "cpu f32 / memcpy", f32 / copy);
}

}  // namespace
}  // namespace caravan::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  caravan::bench::host_arrays();  // faulted in here, not in the first case timed
  auto reducers = caravan::bench::start_all();
  caravan::bench::register_all(reducers);
  benchmark::RunSpecifiedBenchmarks();
  caravan::bench::summary(reducers);
  benchmark::Shutdown();
  for (auto& r : reducers) r->ops->finalize(r->ctx);
  return 0;
}
