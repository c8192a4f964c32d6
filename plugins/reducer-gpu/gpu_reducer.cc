// The GPU reducer's element-wise ops: device choice and checks at init, and
// the hand-off to the kernels on the caller's stream.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <string>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_cxx.hpp"
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

// The reducer's parameters, listed by the descriptor and read by the constructor.
constexpr plugin::Param kDevice{
    "DEVICE", nullptr,
    "CUDA device to use; default BYTEPS_LOCAL_RANK modulo the device count, else the current one"};
constexpr plugin::Param kBlockThreads{
    "BLOCK_THREADS", "256", "threads per block of every kernel (a multiple of 32 in 32..1024)"};
constexpr plugin::Param kLocalTimeoutS{
    "LOCAL_TIMEOUT_S", "300",
    "seconds to wait for the local group to form, or to flush when it is left"};

int device_attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  cuda_check(cudaDeviceGetAttribute(&v, attr, device), "cudaDeviceGetAttribute");
  return v;
}

int choose_device(const Host& h, int devices) {
  if (auto given = kDevice.given_integer(h)) {
    long long d = *given;
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

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

}  // namespace

GpuReducer::GpuReducer(const caravan_host_v1* host) : host_(host) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::string why = err != cudaSuccess ? cudaGetErrorString(err) : "0 devices";
    cudaGetLastError();  // not sticky: a later init may still find a device
    throw Error(CARAVAN_STATUS_UNAVAILABLE,
                "gpu reducer: no CUDA device found (cudaGetDeviceCount: " + why + ")");
  }
  device_ = choose_device(host_, devices);
  long long threads = kBlockThreads.integer(host_);
  if (threads < 32 || threads > 1024 || threads % 32 != 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "gpu reducer: BLOCK_THREADS=" + std::to_string(threads) +
                    " is not a multiple of 32 in 32..1024");
  long long timeout_s = kLocalTimeoutS.integer(host_);
  if (timeout_s < 1 || timeout_s > kMaxTimeoutS)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "gpu reducer: LOCAL_TIMEOUT_S=" + std::to_string(timeout_s) + " is outside 1.." +
                    std::to_string(kMaxTimeoutS));
  local_timeout_ms_ = timeout_s * 1000;

  DeviceScope scope(device_);
  int major = device_attribute(cudaDevAttrComputeCapabilityMajor, device_);
  int minor = device_attribute(cudaDevAttrComputeCapabilityMinor, device_);
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  err = check_kernel_image();
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw Error(CARAVAN_STATUS_UNAVAILABLE,
                "gpu reducer: device " + std::to_string(device_) + " (" + arch +
                    ") cannot run this build's kernels (sm_90 and compute_90 PTX): " +
                    cudaGetErrorString(err));
  }
  // Native code on sm_90 itself; the driver compiles the PTX for later GPUs.
  kernel_ = major == 9 && minor == 0 ? "cuda-sm90" : "cuda-sm90-ptx";
  int sms = device_attribute(cudaDevAttrMultiProcessorCount, device_);
  int per_sm = device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, device_);
  grid_ = {static_cast<int>(threads),
           std::max(1, sms * std::max(1, per_sm / static_cast<int>(threads)))};
  std::string local = "no local group (built without NCCL)";
#if CARAVAN_REDUCER_GPU_NCCL
  local = "local group over NCCL " + nccl_version();
#endif
  host_.log(CARAVAN_LOG_INFO, "gpu reducer: device " + std::to_string(device_) + " (" + arch +
                                  ", " + std::to_string(sms) + " SMs), kernel " + kernel_ + ", " +
                                  std::to_string(threads) + " threads per block, " + local);
}

// No destructor of its own: work in flight holds no reference to the
// instance (kernels take their arguments by value), so there is nothing to
// wait for before freeing it.

caravan_reducer_properties_v1 GpuReducer::properties() const {
  caravan_reducer_properties_v1 p{};
  p.caps = CARAVAN_REDUCER_CAP_DEVICE_MEMORY | CARAVAN_REDUCER_CAP_ASYNC_STREAM |
           CARAVAN_REDUCER_CAP_DEVICE_SERVICES | CARAVAN_REDUCER_CAP_DEVICE_IPC |
           (kHasNccl ? CARAVAN_REDUCER_CAP_LOCAL_GROUP : 0);
  p.dtypes = (1u << CARAVAN_DTYPE_COUNT) - 1u;
  p.kernel = kernel_;
  return p;
}

void GpuReducer::sum(void* dst, const void* src, size_t count, caravan_dtype dtype, void* stream) {
  if (count == 0) return;
  DeviceScope scope(device_);
  cuda_check(launch_add2(dtype, dst, dst, src, count, grid_, as_stream(stream)), "sum kernel");
}

void GpuReducer::sum2(void* dst, const void* a, const void* b, size_t count, caravan_dtype dtype,
                      void* stream) {
  if (count == 0) return;
  DeviceScope scope(device_);
  cuda_check(launch_add2(dtype, dst, a, b, count, grid_, as_stream(stream)), "sum2 kernel");
}

void GpuReducer::sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                          caravan_dtype dtype, void* stream) {
  if (count == 0) return;
  DeviceScope scope(device_);
  cuda_check(launch_sum_many(dtype, dst, srcs, num_srcs, count, grid_, as_stream(stream)),
             "sum_many kernel");
}

void GpuReducer::scale(void* data, size_t count, caravan_dtype dtype, double factor, void* stream) {
  if (!scales(dtype))
    throw Error(CARAVAN_STATUS_UNSUPPORTED,
                "gpu reducer: scale is for floating types, not dtype " + std::to_string(dtype));
  if (count == 0) return;
  DeviceScope scope(device_);
  cuda_check(launch_scale(dtype, data, count, factor, grid_, as_stream(stream)), "scale kernel");
}

namespace {

const caravan_param_info kParams[] = {kDevice.info, kBlockThreads.info, kLocalTimeoutS.info};

}  // namespace
}  // namespace caravan::reducer_gpu

CARAVAN_PLUGIN_ENTRY(caravan::plugin::reducer_descriptor_v1<caravan::reducer_gpu::GpuReducer>(
    "gpu", CARAVAN_VERSION_STRING,
    caravan::reducer_gpu::kHasNccl
        ? "sums CUDA device memory on the caller's stream; NCCL local group"
        : "sums CUDA device memory on the caller's stream (built without NCCL)",
    caravan::reducer_gpu::kParams))
