// caravan-gpu-bench: the GPU reducer and the device staging path against
// what the hardware reaches alone, measured in the same run:
//  - reducer-gpu's in-place sum (dst += src) of 1 GiB of float32, float16
//    and bfloat16 against a 1 GiB device-to-device cudaMemcpyAsync, both
//    as memory traffic (a sum reads two arrays and writes one, a copy reads
//    one and writes one);
//  - the staging copies as the engine makes them (the plugin's copy() per
//    4096000-byte partition, an event recorded after each, on a stream of
//    the plugin's) against one cudaMemcpyAsync of the whole tensor between
//    the same device and page-locked buffers, device to host and back.
// Usage: caravan-gpu-bench [--reducer PATH] [--bytes N] [--staging-bytes N]
// Exit 77 when no CUDA device is visible.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "caravan/plugin/reducer_v1.h"
#include "conformance/host/fake_host.h"
#include "conformance/host/plugin_file.h"

namespace {

using caravan::conformance::FakeHost;
using caravan::conformance::PluginFile;

void must(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "caravan-gpu-bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

void must(caravan_status s, const FakeHost& host, const char* what) {
  if (s == CARAVAN_STATUS_OK) return;
  std::fprintf(stderr, "caravan-gpu-bench: %s failed (status %d): %s\n", what, s,
               host.error().c_str());
  std::exit(1);
}

// Seconds of `enqueue` (work on `stream`), the median of 9 after 2 warm-ups,
// timed with events on the stream.
double seconds(cudaStream_t stream, const std::function<void()>& enqueue) {
  cudaEvent_t a, b;
  must(cudaEventCreate(&a), "cudaEventCreate");
  must(cudaEventCreate(&b), "cudaEventCreate");
  std::vector<double> t;
  for (int i = 0; i < 11; ++i) {
    must(cudaEventRecord(a, stream), "cudaEventRecord");
    enqueue();
    must(cudaEventRecord(b, stream), "cudaEventRecord");
    must(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    must(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    if (i >= 2) t.push_back(ms / 1e3);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

size_t parse_bytes(const char* v) {
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (*end == 'M')
    n <<= 20;
  else if (*end == 'G')
    n <<= 30;
  else if (*end == 'K')
    n <<= 10;
  return static_cast<size_t>(n);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = CARAVAN_GPU_BENCH_REDUCER;
  size_t bytes = size_t{1} << 30, staging = size_t{64} << 20;
  const size_t partition = 4096000;  // BYTEPS_PARTITION_BYTES' default
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--reducer"))
      path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--bytes"))
      bytes = parse_bytes(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--staging-bytes"))
      staging = parse_bytes(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: caravan-gpu-bench [--reducer PATH] [--bytes N] "
                   "[--staging-bytes N]\n");
      return 2;
    }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("caravan-gpu-bench: skipped: no CUDA device visible\n");
    return 77;
  }
  cudaDeviceProp prop{};
  must(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  PluginFile file;
  std::string why = caravan::conformance::open_plugin_file(path, CARAVAN_PLUGIN_KIND_REDUCER,
                                                           CARAVAN_REDUCER_ABI_MAJOR_V1, &file);
  if (!why.empty()) {
    std::fprintf(stderr, "caravan-gpu-bench: %s: %s\n", path.c_str(), why.c_str());
    return 1;
  }
  const auto& ops = *static_cast<const caravan_reducer_ops_v1*>(file.ops);
  FakeHost host("gpu");
  void* ctx = nullptr;
  must(ops.init(host.table(), &ctx), host, "init");
  cudaStream_t stream;
  must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  std::printf("caravan-gpu-bench: %s, %d SMs, %s\n", prop.name, prop.multiProcessorCount,
              path.c_str());
  // ---- Sums against the device-to-device copy ----
  void *a = nullptr, *b = nullptr;
  must(cudaMalloc(&a, bytes), "cudaMalloc");
  must(cudaMalloc(&b, bytes), "cudaMalloc");
  must(cudaMemset(a, 0, bytes), "cudaMemset");  // zeros: sums stay zero, no overflow or NaN
  must(cudaMemset(b, 0, bytes), "cudaMemset");
  double copy_s = seconds(stream, [&] {
    must(cudaMemcpyAsync(a, b, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  });
  double copy_bw = 2.0 * bytes / copy_s / 1e9;
  std::printf("\n%-34s %10s %12s %10s\n", "1 GiB in device memory", "ms", "traffic GB/s",
              "vs copy");
  std::printf("%-34s %10.3f %12.1f %10s\n", "cudaMemcpyAsync device to device", copy_s * 1e3,
              copy_bw, "1.00");
  for (caravan_dtype dt : {CARAVAN_FLOAT32, CARAVAN_FLOAT16, CARAVAN_BFLOAT16}) {
    size_t count = bytes / caravan_dtype_size(dt);
    double s = seconds(stream, [&] { must(ops.sum(ctx, a, b, count, dt, stream), host, "sum"); });
    double bw = 3.0 * bytes / s / 1e9;
    std::string label = std::string("reducer-gpu sum ") + caravan_dtype_name(dt);
    std::printf("%-34s %10.3f %12.1f %10.2f\n", label.c_str(), s * 1e3, bw, bw / copy_bw);
  }
  cudaFree(a);
  cudaFree(b);

  // ---- Staging copies against cudaMemcpyAsync alone ----
  void *dev = nullptr, *pinned = nullptr, *own = nullptr;
  must(cudaMalloc(&dev, staging), "cudaMalloc");
  must(ops.host_alloc(ctx, staging, &pinned), host, "host_alloc");
  must(ops.stream_create(ctx, &own), host, "stream_create");
  size_t parts = (staging + partition - 1) / partition;
  std::vector<void*> events(parts);
  for (void*& e : events) must(ops.event_create(ctx, &e), host, "event_create");
  std::printf("\n%-34s %10s %12s %10s\n",
              (std::to_string(staging >> 20) + " MiB, page-locked host").c_str(), "ms", "GB/s",
              "vs alone");
  for (bool to_host : {true, false}) {
    void* dst = to_host ? pinned : dev;
    void* src = to_host ? dev : pinned;
    double alone = seconds(stream, [&] {
      must(cudaMemcpyAsync(dst, src, staging, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
    });
    cudaStream_t s = static_cast<cudaStream_t>(own);
    double staged = seconds(s, [&] {
      for (size_t p = 0; p < parts; ++p) {
        size_t off = p * partition, n = std::min(partition, staging - off);
        must(ops.copy(ctx, static_cast<char*>(dst) + off, static_cast<char*>(src) + off, n, own),
             host, "copy");
        must(ops.event_record(ctx, events[p], own), host, "event_record");
      }
    });
    const char* dir = to_host ? "device to host" : "host to device";
    std::printf("%-34s %10.3f %12.1f %10s\n", (std::string("cudaMemcpyAsync ") + dir).c_str(),
                alone * 1e3, staging / alone / 1e9, "1.00");
    std::printf("%-34s %10.3f %12.1f %10.2f\n",
                (std::string("staged, ") + std::to_string(parts) + " partitions").c_str(),
                staged * 1e3, staging / staged / 1e9, alone / staged);
  }
  for (void* e : events) ops.event_destroy(ctx, e);
  ops.stream_destroy(ctx, own);
  ops.host_free(ctx, pinned);
  cudaFree(dev);
  ops.finalize(ctx);
  return 0;
}
