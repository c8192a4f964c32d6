// One GPU reducer instance: the element-wise ops in gpu_reducer.cc, the
// local group in nccl_group.cc. The C boundary and the argument checks every
// reducer shares come from the SDK's reducer_cxx.hpp.
#ifndef CARAVAN_REDUCER_GPU_REDUCER_H
#define CARAVAN_REDUCER_GPU_REDUCER_H

#include <cuda_runtime_api.h>

#include <string>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"
#include "kernels.h"

namespace caravan::reducer_gpu {

using plugin::Error;
using plugin::Host;

class GpuReducer {
  CARAVAN_REDUCER_V1_CLASS(GpuReducer, "gpu reducer")
#if CARAVAN_REDUCER_GPU_NCCL
  void local_id(void* id_out, size_t* id_len);
  void* local_join(const void* id, size_t id_len, int local_rank, int local_size);
  void local_leave(void* group);
  void local_reduce(void* group, void* dst, const void* src, size_t count, caravan_dtype dtype,
                    int root, void* stream);
  void local_broadcast(void* group, void* data, size_t count, caravan_dtype dtype, int root,
                       void* stream);
#endif
  // Device memory services (reducer ABI 1.1), in device_services.cc: what
  // the engine stages a device tensor through host memory with.
  int memory_device(const void* ptr);
  void* host_alloc(size_t bytes);
  void host_free(void* ptr);
  void* stream_create();
  void stream_destroy(void* stream);
  void copy(void* dst, const void* src, size_t bytes, void* stream);
  void* event_create();
  void event_destroy(void* event);
  void event_record(void* event, void* stream);
  void stream_wait(void* stream, void* event);
  bool event_done(void* event);
  // Between the worker processes of one machine (CUDA IPC), in device_services.cc.
  void* device_alloc(size_t bytes);
  void device_free(void* ptr);
  size_t ipc_export(const void* ptr, void* handle_out, size_t capacity);
  void* ipc_open(const void* handle, size_t len);
  void ipc_close(void* ptr);
  void* ipc_event_create(void* handle_out, size_t capacity, size_t* len);
  void* ipc_event_open(const void* handle, size_t len);

 private:
  Host host_;
  int device_ = 0;
  Grid grid_{256, 1};
  const char* kernel_ = "cuda-sm90";
  long long local_timeout_ms_ = 0;
};

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
