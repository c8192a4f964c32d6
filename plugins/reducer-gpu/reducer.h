// One GPU reducer instance and the checks every entry of the table shares
// (the element-wise ops in gpu_reducer.cc, the local group in nccl_group.cc).
#ifndef CARAVAN_REDUCER_GPU_REDUCER_H
#define CARAVAN_REDUCER_GPU_REDUCER_H

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"
#include "kernels.h"

namespace caravan::reducer_gpu {

using plugin::Error;
using plugin::Host;

struct Reducer {
  explicit Reducer(const caravan_host_v1* h) : host(h) {}
  Host host;
  int device = 0;
  Grid grid{256, 1};
  const char* kernel = "cuda-sm90";
  long long local_timeout_ms = 0;
};

inline Reducer& instance(void* ctx) {
  if (!ctx) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: NULL instance");
  return *static_cast<Reducer*>(ctx);
}

inline const Host& host_of(void* ctx) {
  static const Host none(nullptr);
  return ctx ? static_cast<Reducer*>(ctx)->host : none;
}

// In C++ reading a caravan_dtype that holds no enumerator is undefined, and C
// callers may pass any int, so the bytes are copied rather than the enum read.
inline unsigned dtype_index(const caravan_dtype* dtype) {
  static_assert(sizeof(caravan_dtype) == sizeof(int32_t),
                "caravan_dtype is passed as a 32-bit int");
  int32_t raw;
  std::memcpy(&raw, dtype, sizeof raw);
  if (raw < 0 || raw >= CARAVAN_DTYPE_COUNT)
    throw Error(CARAVAN_STATUS_UNSUPPORTED,
                "gpu reducer: unsupported dtype " + std::to_string(raw));
  return static_cast<unsigned>(raw);
}

inline void check_pointer(const void* p, size_t count, const char* what) {
  if (!p && count > 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, std::string("gpu reducer: NULL ") + what);
}

inline void cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  // A stream of another device or context is the caller's mistake, not ours.
  caravan_status status = err == cudaErrorMemoryAllocation        ? CARAVAN_STATUS_NO_MEMORY
                          : err == cudaErrorInvalidResourceHandle ? CARAVAN_STATUS_INVALID_ARGUMENT
                                                                  : CARAVAN_STATUS_INTERNAL;
  throw Error(status, std::string("gpu reducer: ") + what + ": " + cudaGetErrorName(err) + ": " +
                          cudaGetErrorString(err));
}

// Makes the instance's device current for one call and gives the caller's
// thread its own device back afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int device) : device_(device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device_) cuda_check(cudaSetDevice(device_), "cudaSetDevice");
  }
  ~DeviceScope() {
    if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int device_;
  int previous_ = -1;
};

}  // namespace caravan::reducer_gpu

#endif  // CARAVAN_REDUCER_GPU_REDUCER_H
