// The CPU reducer: kernel choice at init, and the split of large sums into
// cache-sized blocks and across the thread pool. The C boundary and the
// argument checks every reducer shares come from the SDK's reducer_cxx.hpp.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_cxx.hpp"
#include "kernels.h"
#include "thread_pool.h"

#ifndef CARAVAN_VERSION_STRING
#define CARAVAN_VERSION_STRING "0.0.0"
#endif

namespace caravan::reducer_cpu {
namespace {

using plugin::Error;
using plugin::Host;
using Byte = unsigned char;

// Elements per block of sum_many: the destination block and the float32
// accumulator stay in L1 while the sources stream past them once.
constexpr size_t kBlock = 2048;
constexpr long long kMaxThreads = 256;

// The reducer's parameters, listed by the descriptor and read by the constructor.
constexpr plugin::Param kKernel{"KERNEL", "auto", "kernel family: auto, avx512, avx2 or portable"};
constexpr plugin::Param kThreads{"THREADS", "1", "threads that share one large sum"};
constexpr plugin::Param kMinBytesPerThread{
    "MIN_BYTES_PER_THREAD", "1048576",
    "bytes of output each thread must get before a sum is split"};

class CpuReducer {
  CARAVAN_REDUCER_V1_CLASS(CpuReducer, "cpu reducer")

 private:
  void split(size_t count, size_t elem, const std::function<void(size_t, size_t)>& body);

  Host host_;
  const KernelSet* kernels_ = nullptr;
  size_t min_bytes_per_thread_ = 1 << 20;
  std::unique_ptr<ThreadPool> pool_;  // absent when THREADS is 1
};

// ---- Kernel choice -------------------------------------------------------

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

const KernelSet* choose_kernels(const std::string& wanted) {
  const KernelSet* avx512 = cpu_has_avx512() ? avx512_kernels() : nullptr;
  const KernelSet* avx2 = cpu_has_avx2() ? avx2_kernels() : nullptr;
  if (wanted == "auto") return avx512 ? avx512 : avx2 ? avx2 : portable_kernels();
  if (wanted == "portable") return portable_kernels();
  const KernelSet* k = wanted == "avx512" ? avx512 : wanted == "avx2" ? avx2 : nullptr;
  if (wanted != "avx512" && wanted != "avx2")
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cpu reducer: KERNEL='" + wanted + "' is not one of auto, avx512, avx2, portable");
  if (!k)
    throw Error(CARAVAN_STATUS_UNAVAILABLE,
                "cpu reducer: KERNEL=" + wanted + " asked for, but this CPU or build lacks " +
                    (wanted == "avx512" ? "AVX-512 F/BW" : "AVX2/F16C/FMA"));
  return k;
}

// ---- Checks --------------------------------------------------------------

void check_stream(void* stream) {
  if (stream)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cpu reducer: works on host memory and takes no stream (got a non-NULL one)");
}

// ---- Splitting -----------------------------------------------------------

// Calls body(begin, end) over [0, count), on several threads when the data is
// large enough to pay for the hand-off. Every op is element-wise, so the
// split never changes a result.
void CpuReducer::split(size_t count, size_t elem, const std::function<void(size_t, size_t)>& body) {
  size_t tasks = 1;
  if (pool_) tasks = std::min(pool_->size(), count * elem / min_bytes_per_thread_);
  if (tasks <= 1) {
    body(0, count);
    return;
  }
  // Whole cache lines per task, so no two threads write the same line.
  size_t chunk = ((count + tasks - 1) / tasks + 63) & ~size_t{63};
  tasks = (count + chunk - 1) / chunk;
  pool_->run(tasks, [&](size_t t) { body(t * chunk, std::min(count, (t + 1) * chunk)); });
}

const Byte* at(const void* p, size_t i, size_t z) { return static_cast<const Byte*>(p) + i * z; }
Byte* at(void* p, size_t i, size_t z) { return static_cast<Byte*>(p) + i * z; }

void sum_many_range(const KernelSet& k, unsigned dt, size_t z, void* dst, const void* const* srcs,
                    size_t num, size_t begin, size_t end) {
  if (num == 1) {
    if (dst != srcs[0]) std::memcpy(at(dst, begin, z), at(srcs[0], begin, z), (end - begin) * z);
    return;
  }
  Add2Fn add2 = k.add2[dt];
  if (num == 2 || !k.acc_init[dt]) {
    for (size_t b = begin; b < end; b += kBlock) {
      size_t n = std::min(kBlock, end - b);
      Byte* d = at(dst, b, z);
      add2(d, at(srcs[0], b, z), at(srcs[1], b, z), n);
      for (size_t s = 2; s < num; ++s) add2(d, d, at(srcs[s], b, z), n);
    }
    return;
  }
  float acc[kBlock];
  for (size_t b = begin; b < end; b += kBlock) {
    size_t n = std::min(kBlock, end - b);
    k.acc_init[dt](acc, at(srcs[0], b, z), at(srcs[1], b, z), n);
    for (size_t s = 2; s < num; ++s) k.acc_add[dt](acc, at(srcs[s], b, z), n);
    k.acc_store[dt](at(dst, b, z), acc, n);
  }
}

// ---- The reducer -----------------------------------------------------------

CpuReducer::CpuReducer(const caravan_host_v1* host) : host_(host) {
  kernels_ = choose_kernels(kKernel.text(host_));
  long long threads = kThreads.integer(host_);
  if (threads < 1 || threads > kMaxThreads)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cpu reducer: THREADS=" + std::to_string(threads) +
                                                     " is outside 1.." +
                                                     std::to_string(kMaxThreads));
  min_bytes_per_thread_ =
      std::max<size_t>(1, static_cast<size_t>(kMinBytesPerThread.integer(host_)));
  if (threads > 1) pool_ = std::make_unique<ThreadPool>(static_cast<size_t>(threads - 1));
  host_.log(CARAVAN_LOG_INFO, std::string("cpu reducer: kernel ") + kernels_->name + ", " +
                                  std::to_string(threads) + " thread(s)");
}

caravan_reducer_properties_v1 CpuReducer::properties() const {
  caravan_reducer_properties_v1 p{};
  p.caps = CARAVAN_REDUCER_CAP_HOST_MEMORY;
  p.dtypes = (1u << CARAVAN_DTYPE_COUNT) - 1u;
  p.kernel = kernels_->name;
  return p;
}

void CpuReducer::sum(void* dst, const void* src, size_t count, caravan_dtype dtype, void* stream) {
  check_stream(stream);
  size_t z = caravan_dtype_size(dtype);
  Add2Fn add2 = kernels_->add2[dtype];
  split(count, z,
        [&](size_t b, size_t e) { add2(at(dst, b, z), at(dst, b, z), at(src, b, z), e - b); });
}

void CpuReducer::sum2(void* dst, const void* a, const void* b, size_t count, caravan_dtype dtype,
                      void* stream) {
  check_stream(stream);
  size_t z = caravan_dtype_size(dtype);
  Add2Fn add2 = kernels_->add2[dtype];
  split(count, z,
        [&](size_t s, size_t e) { add2(at(dst, s, z), at(a, s, z), at(b, s, z), e - s); });
}

void CpuReducer::sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                          caravan_dtype dtype, void* stream) {
  check_stream(stream);
  size_t z = caravan_dtype_size(dtype);
  const KernelSet& k = *kernels_;
  split(count, z,
        [&](size_t b, size_t e) { sum_many_range(k, dtype, z, dst, srcs, num_srcs, b, e); });
}

void CpuReducer::scale(void* data, size_t count, caravan_dtype dtype, double factor, void* stream) {
  ScaleFn fn = kernels_->scale[dtype];
  if (!fn)
    throw Error(CARAVAN_STATUS_UNSUPPORTED,
                "cpu reducer: scale is for floating types, not dtype " + std::to_string(dtype));
  check_stream(stream);
  size_t z = caravan_dtype_size(dtype);
  split(count, z, [&](size_t b, size_t e) { fn(at(data, b, z), e - b, factor); });
}

// ---- The C face -------------------------------------------------------------

const caravan_param_info kParams[] = {kKernel.info, kThreads.info, kMinBytesPerThread.info};

}  // namespace
}  // namespace caravan::reducer_cpu

CARAVAN_PLUGIN_ENTRY(caravan::plugin::reducer_descriptor_v1<caravan::reducer_cpu::CpuReducer>(
    "cpu", CARAVAN_VERSION_STRING,
    "sums host memory on the CPU (portable, AVX2 or AVX-512 kernels)",
    caravan::reducer_cpu::kParams))
