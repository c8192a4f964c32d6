// The reducer ABI table: argument checks, kernel choice at init, and the
// split of large sums into cache-sized blocks and across the thread pool.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"
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

constexpr size_t kElemSize[CARAVAN_DTYPE_COUNT] = {4, 8, 2, 1, 4, 1, 8, 2};
// Elements per block of sum_many: the destination block and the float32
// accumulator stay in L1 while the sources stream past them once.
constexpr size_t kBlock = 2048;
constexpr long long kMaxThreads = 256;

struct Reducer {
  explicit Reducer(const caravan_host_v1* h) : host(h) {}
  Host host;
  const KernelSet* kernels = nullptr;
  size_t min_bytes_per_thread = 1 << 20;
  std::unique_ptr<ThreadPool> pool;  // absent when THREADS is 1
};

// ---- Kernel choice -------------------------------------------------------

bool cpu_has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
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

Reducer& instance(void* ctx) {
  if (!ctx) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cpu reducer: NULL instance");
  return *static_cast<Reducer*>(ctx);
}

const Host& host_of(void* ctx) {
  static const Host none(nullptr);
  return ctx ? static_cast<Reducer*>(ctx)->host : none;
}

// The dtype's index into the kernel tables. C callers may pass any int, but
// in C++ reading a caravan_dtype that holds no enumerator is undefined (the
// enum's range is only 0..7), so the bytes are copied, never the enum read.
unsigned dtype_index(const caravan_dtype* dtype) {
  static_assert(sizeof(caravan_dtype) == sizeof(int32_t), "caravan_dtype is passed as a 32-bit int");
  int32_t raw;
  std::memcpy(&raw, dtype, sizeof raw);
  if (raw < 0 || raw >= CARAVAN_DTYPE_COUNT)
    throw Error(CARAVAN_STATUS_UNSUPPORTED, "cpu reducer: unsupported dtype " + std::to_string(raw));
  return static_cast<unsigned>(raw);
}

void check_pointer(const void* p, size_t count, const char* what) {
  if (!p && count > 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, std::string("cpu reducer: NULL ") + what);
}

void check_stream(void* stream) {
  if (stream)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cpu reducer: works on host memory and takes no stream (got a non-NULL one)");
}

// ---- Splitting -----------------------------------------------------------

// Calls body(begin, end) over [0, count), on several threads when the data is
// large enough to pay for the hand-off. Every op is element-wise, so the
// split never changes a result.
void split(Reducer& r, size_t count, size_t elem, const std::function<void(size_t, size_t)>& body) {
  size_t tasks = 1;
  if (r.pool) tasks = std::min(r.pool->size(), count * elem / r.min_bytes_per_thread);
  if (tasks <= 1) {
    body(0, count);
    return;
  }
  // Whole cache lines per task, so no two threads write the same line.
  size_t chunk = ((count + tasks - 1) / tasks + 63) & ~size_t{63};
  tasks = (count + chunk - 1) / chunk;
  r.pool->run(tasks, [&](size_t t) { body(t * chunk, std::min(count, (t + 1) * chunk)); });
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

// ---- The table -------------------------------------------------------------

caravan_status init(const caravan_host_v1* host, void** out_ctx) {
  Host h(host);
  return plugin::guarded(h, [&]() -> caravan_status {
    if (!host || !out_ctx || host->struct_size < sizeof(caravan_host_v1))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cpu reducer: init needs a v1 host table and out_ctx");
    *out_ctx = nullptr;
    auto r = std::make_unique<Reducer>(host);
    r->kernels = choose_kernels(h.param("KERNEL").value_or("auto"));
    long long threads = h.param_int("THREADS", 1);
    if (threads < 1 || threads > kMaxThreads)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "cpu reducer: THREADS=" + std::to_string(threads) + " is outside 1.." + std::to_string(kMaxThreads));
    r->min_bytes_per_thread = std::max<size_t>(1, static_cast<size_t>(h.param_int("MIN_BYTES_PER_THREAD", 1 << 20)));
    if (threads > 1) r->pool = std::make_unique<ThreadPool>(static_cast<size_t>(threads - 1));
    h.log(CARAVAN_LOG_INFO, std::string("cpu reducer: kernel ") + r->kernels->name + ", " +
                                std::to_string(threads) + " thread(s)");
    *out_ctx = r.release();
    return CARAVAN_STATUS_OK;
  });
}

caravan_status finalize(void* ctx) {
  Host h(ctx ? static_cast<Reducer*>(ctx)->host.raw() : nullptr);  // outlives the instance
  return plugin::guarded(h, [&]() -> caravan_status {
    delete &instance(ctx);  // joins the pool's workers
    return CARAVAN_STATUS_OK;
  });
}

caravan_status properties(void* ctx, caravan_reducer_properties_v1* out) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    check_pointer(out, 1, "properties output");
    // Fill only what the caller's (possibly older, smaller) struct has room for.
    auto fits = [&](size_t offset, size_t size) { return out->struct_size >= offset + size; };
    if (fits(offsetof(caravan_reducer_properties_v1, caps), sizeof out->caps))
      out->caps = CARAVAN_REDUCER_CAP_HOST_MEMORY;
    if (fits(offsetof(caravan_reducer_properties_v1, dtypes), sizeof out->dtypes))
      out->dtypes = (1u << CARAVAN_DTYPE_COUNT) - 1u;
    if (fits(offsetof(caravan_reducer_properties_v1, kernel), sizeof out->kernel)) out->kernel = r.kernels->name;
    return CARAVAN_STATUS_OK;
  });
}

caravan_status sum(void* ctx, void* dst, const void* src, size_t count, caravan_dtype dtype, void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    size_t z = kElemSize[dt];
    check_pointer(dst, count, "dst");
    check_pointer(src, count, "src");
    check_stream(stream);
    Add2Fn add2 = r.kernels->add2[dt];
    split(r, count, z, [&](size_t b, size_t e) { add2(at(dst, b, z), at(dst, b, z), at(src, b, z), e - b); });
    return CARAVAN_STATUS_OK;
  });
}

caravan_status sum2(void* ctx, void* dst, const void* a, const void* b, size_t count, caravan_dtype dtype,
                    void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    size_t z = kElemSize[dt];
    check_pointer(dst, count, "dst");
    check_pointer(a, count, "a");
    check_pointer(b, count, "b");
    check_stream(stream);
    Add2Fn add2 = r.kernels->add2[dt];
    split(r, count, z, [&](size_t s, size_t e) { add2(at(dst, s, z), at(a, s, z), at(b, s, z), e - s); });
    return CARAVAN_STATUS_OK;
  });
}

caravan_status sum_many(void* ctx, void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                        caravan_dtype dtype, void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    size_t z = kElemSize[dt];
    if (num_srcs == 0) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cpu reducer: sum_many needs num_srcs >= 1");
    check_pointer(srcs, num_srcs, "srcs");
    check_pointer(dst, count, "dst");
    for (size_t s = 0; s < num_srcs; ++s)
      check_pointer(srcs[s], count, ("srcs[" + std::to_string(s) + "]").c_str());
    check_stream(stream);
    const KernelSet& k = *r.kernels;
    split(r, count, z, [&](size_t b, size_t e) { sum_many_range(k, dt, z, dst, srcs, num_srcs, b, e); });
    return CARAVAN_STATUS_OK;
  });
}

caravan_status scale(void* ctx, void* data, size_t count, caravan_dtype dtype, double factor, void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    size_t z = kElemSize[dt];
    ScaleFn fn = r.kernels->scale[dt];
    if (!fn)
      throw Error(CARAVAN_STATUS_UNSUPPORTED,
                  "cpu reducer: scale is for floating types, not dtype " + std::to_string(dt));
    check_pointer(data, count, "data");
    check_stream(stream);
    split(r, count, z, [&](size_t b, size_t e) { fn(at(data, b, z), e - b, factor); });
    return CARAVAN_STATUS_OK;
  });
}

const caravan_reducer_ops_v1 kOps = {
    sizeof(caravan_reducer_ops_v1), init, finalize, properties, sum, sum2, sum_many, scale,
    // Host memory of one process: the local group goes through the engine's
    // shared memory, not the reducer.
    nullptr, nullptr, nullptr, nullptr, nullptr,
};

const caravan_param_info kParams[] = {
    {"KERNEL", "auto", "kernel family: auto, avx512, avx2 or portable"},
    {"THREADS", "1", "threads that share one large sum"},
    {"MIN_BYTES_PER_THREAD", "1048576", "bytes of output each thread must get before a sum is split"},
};

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_REDUCER_ABI_MAJOR_V1,
    CARAVAN_REDUCER_ABI_MINOR_V1,
    CARAVAN_PLUGIN_KIND_REDUCER,
    sizeof(caravan_plugin_descriptor),
    "cpu",
    CARAVAN_VERSION_STRING,
    "sums host memory on the CPU (portable, AVX2 or AVX-512 kernels)",
    kParams,
    sizeof kParams / sizeof kParams[0],
    &kOps,
};

}  // namespace
}  // namespace caravan::reducer_cpu

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &caravan::reducer_cpu::kDescriptor;
}
