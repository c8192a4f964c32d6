// The reducer ABI table for device memory: device choice and checks at init,
// argument checks, and the hand-off to the kernels on the caller's stream.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"
#include "kernels.h"
#include "reducer.h"
#if CARAVAN_REDUCER_GPU_NCCL
#include "nccl_group.h"
#endif

#ifndef CARAVAN_VERSION_STRING
#define CARAVAN_VERSION_STRING "0.0.0"
#endif

namespace caravan::reducer_gpu {
namespace {

constexpr bool kHasNccl = CARAVAN_REDUCER_GPU_NCCL;
constexpr long long kMaxTimeoutS = 7 * 24 * 3600;

int device_attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  cuda_check(cudaDeviceGetAttribute(&v, attr, device), "cudaDeviceGetAttribute");
  return v;
}

int choose_device(const Host& h, int devices) {
  if (h.param("DEVICE")) {
    long long d = h.param_int("DEVICE", 0);
    if (d >= devices)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: DEVICE=" + std::to_string(d) +
                                                       " but only " + std::to_string(devices) +
                                                       " CUDA device(s) are visible");
    return static_cast<int>(d);
  }
  // One worker per GPU, as BytePS runs them, unless CUDA_VISIBLE_DEVICES
  // already narrowed each worker's view.
  if (auto rank = h.env("BYTEPS_LOCAL_RANK")) {
    char* end = nullptr;
    long long r = std::strtoll(rank->c_str(), &end, 10);
    if (rank->empty() || *end != '\0' || r < 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "gpu reducer: BYTEPS_LOCAL_RANK='" + *rank + "' is not a rank");
    return static_cast<int>(r % devices);
  }
  int current = 0;
  cuda_check(cudaGetDevice(&current), "cudaGetDevice");
  return current;
}

caravan_status init(const caravan_host_v1* host, void** out_ctx) {
  Host h(host);
  return plugin::guarded(h, [&]() -> caravan_status {
    if (!host || !out_ctx || host->struct_size < sizeof(caravan_host_v1))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "gpu reducer: init needs a v1 host table and out_ctx");
    *out_ctx = nullptr;
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0) {
      std::string why = err != cudaSuccess ? cudaGetErrorString(err) : "0 devices";
      cudaGetLastError();  // not sticky: a later init may still find a device
      throw Error(CARAVAN_STATUS_UNAVAILABLE,
                  "gpu reducer: no CUDA device found (cudaGetDeviceCount: " + why + ")");
    }
    auto r = std::make_unique<Reducer>(host);
    r->device = choose_device(h, devices);
    long long threads = h.param_int("BLOCK_THREADS", 256);
    if (threads < 32 || threads > 1024 || threads % 32 != 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "gpu reducer: BLOCK_THREADS=" + std::to_string(threads) +
                      " is not a multiple of 32 in 32..1024");
    long long timeout_s = h.param_int("LOCAL_TIMEOUT_S", 300);
    if (timeout_s < 1 || timeout_s > kMaxTimeoutS)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "gpu reducer: LOCAL_TIMEOUT_S=" + std::to_string(timeout_s) + " is outside 1.." +
                      std::to_string(kMaxTimeoutS));
    r->local_timeout_ms = timeout_s * 1000;

    DeviceScope scope(r->device);
    int major = device_attribute(cudaDevAttrComputeCapabilityMajor, r->device);
    int minor = device_attribute(cudaDevAttrComputeCapabilityMinor, r->device);
    std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
    err = check_kernel_image();
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw Error(CARAVAN_STATUS_UNAVAILABLE,
                  "gpu reducer: device " + std::to_string(r->device) + " (" + arch +
                      ") cannot run this build's kernels (sm_90 and compute_90 PTX): " +
                      cudaGetErrorString(err));
    }
    // Native code on sm_90 itself; the driver compiles the PTX for later GPUs.
    r->kernel = major == 9 && minor == 0 ? "cuda-sm90" : "cuda-sm90-ptx";
    int sms = device_attribute(cudaDevAttrMultiProcessorCount, r->device);
    int per_sm = device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, r->device);
    r->grid = {static_cast<int>(threads),
               std::max(1, sms * std::max(1, per_sm / static_cast<int>(threads)))};
    std::string local = "no local group (built without NCCL)";
#if CARAVAN_REDUCER_GPU_NCCL
    local = "local group over NCCL " + nccl_version();
#endif
    h.log(CARAVAN_LOG_INFO, "gpu reducer: device " + std::to_string(r->device) + " (" + arch +
                                ", " + std::to_string(sms) + " SMs), kernel " + r->kernel + ", " +
                                std::to_string(threads) + " threads per block, " + local);
    *out_ctx = r.release();
    return CARAVAN_STATUS_OK;
  });
}

caravan_status finalize(void* ctx) {
  Host h(ctx ? static_cast<Reducer*>(ctx)->host.raw() : nullptr);  // outlives the instance
  return plugin::guarded(h, [&]() -> caravan_status {
    // Work in flight holds no reference to the instance (kernels take their
    // arguments by value), so there is nothing to wait for before freeing it.
    delete &instance(ctx);
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
      out->caps = CARAVAN_REDUCER_CAP_DEVICE_MEMORY | CARAVAN_REDUCER_CAP_ASYNC_STREAM |
                  (kHasNccl ? CARAVAN_REDUCER_CAP_LOCAL_GROUP : 0);
    if (fits(offsetof(caravan_reducer_properties_v1, dtypes), sizeof out->dtypes))
      out->dtypes = (1u << CARAVAN_DTYPE_COUNT) - 1u;
    if (fits(offsetof(caravan_reducer_properties_v1, kernel), sizeof out->kernel))
      out->kernel = r.kernel;
    return CARAVAN_STATUS_OK;
  });
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

caravan_status sum(void* ctx, void* dst, const void* src, size_t count, caravan_dtype dtype,
                   void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    check_pointer(dst, count, "dst");
    check_pointer(src, count, "src");
    if (count == 0) return CARAVAN_STATUS_OK;
    DeviceScope scope(r.device);
    cuda_check(launch_add2(dt, dst, dst, src, count, r.grid, as_stream(stream)), "sum kernel");
    return CARAVAN_STATUS_OK;
  });
}

caravan_status sum2(void* ctx, void* dst, const void* a, const void* b, size_t count,
                    caravan_dtype dtype, void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    check_pointer(dst, count, "dst");
    check_pointer(a, count, "a");
    check_pointer(b, count, "b");
    if (count == 0) return CARAVAN_STATUS_OK;
    DeviceScope scope(r.device);
    cuda_check(launch_add2(dt, dst, a, b, count, r.grid, as_stream(stream)), "sum2 kernel");
    return CARAVAN_STATUS_OK;
  });
}

caravan_status sum_many(void* ctx, void* dst, const void* const* srcs, size_t num_srcs,
                        size_t count, caravan_dtype dtype, void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    if (num_srcs == 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: sum_many needs num_srcs >= 1");
    check_pointer(srcs, num_srcs, "srcs");
    check_pointer(dst, count, "dst");
    for (size_t s = 0; s < num_srcs; ++s)
      check_pointer(srcs[s], count, ("srcs[" + std::to_string(s) + "]").c_str());
    if (count == 0) return CARAVAN_STATUS_OK;
    DeviceScope scope(r.device);
    cuda_check(launch_sum_many(dt, dst, srcs, num_srcs, count, r.grid, as_stream(stream)),
               "sum_many kernel");
    return CARAVAN_STATUS_OK;
  });
}

caravan_status scale(void* ctx, void* data, size_t count, caravan_dtype dtype, double factor,
                     void* stream) {
  return plugin::guarded(host_of(ctx), [&]() -> caravan_status {
    Reducer& r = instance(ctx);
    unsigned dt = dtype_index(&dtype);
    if (!scales(dt))
      throw Error(CARAVAN_STATUS_UNSUPPORTED,
                  "gpu reducer: scale is for floating types, not dtype " + std::to_string(dt));
    check_pointer(data, count, "data");
    if (count == 0) return CARAVAN_STATUS_OK;
    DeviceScope scope(r.device);
    cuda_check(launch_scale(dt, data, count, factor, r.grid, as_stream(stream)), "scale kernel");
    return CARAVAN_STATUS_OK;
  });
}

const caravan_reducer_ops_v1 kOps = {
    sizeof(caravan_reducer_ops_v1),
    init,
    finalize,
    properties,
    sum,
    sum2,
    sum_many,
    scale,
#if CARAVAN_REDUCER_GPU_NCCL
    local_id,
    local_join,
    local_leave,
    local_reduce,
    local_broadcast,
#else
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
#endif
};

const caravan_param_info kParams[] = {
    {"DEVICE", nullptr,
     "CUDA device to use; default BYTEPS_LOCAL_RANK modulo the device count, else the current one"},
    {"BLOCK_THREADS", "256", "threads per block of every kernel (a multiple of 32 in 32..1024)"},
    {"LOCAL_TIMEOUT_S", "300",
     "seconds to wait for the local group to form, or to flush when it is left"},
};

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_REDUCER_ABI_MAJOR_V1,
    CARAVAN_REDUCER_ABI_MINOR_V1,
    CARAVAN_PLUGIN_KIND_REDUCER,
    sizeof(caravan_plugin_descriptor),
    "gpu",
    CARAVAN_VERSION_STRING,
    kHasNccl ? "sums CUDA device memory on the caller's stream; NCCL local group"
             : "sums CUDA device memory on the caller's stream (built without NCCL)",
    kParams,
    sizeof kParams / sizeof kParams[0],
    &kOps,
};

}  // namespace
}  // namespace caravan::reducer_gpu

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &caravan::reducer_gpu::kDescriptor;
}
