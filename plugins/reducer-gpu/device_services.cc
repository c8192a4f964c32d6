// The GPU reducer's device memory services (reducer ABI 1.1): what the
// engine needs to carry a CUDA tensor through host memory. Every call is
// asynchronous on the device; none waits for device work.
#include <cstring>
#include <string>

#include "reducer.h"

namespace caravan::reducer_gpu {
namespace {

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

}  // namespace

int GpuReducer::memory_device(const void* ptr) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    // Older drivers answer memory CUDA has never seen with an error, not
    // with cudaMemoryTypeUnregistered: that is host memory too.
    cudaGetLastError();
    return -1;
  }
  // Managed memory is device memory that the CPU may also touch; staging
  // it like device memory is correct.
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) return attr.device;
  return -1;
}

void* GpuReducer::host_alloc(size_t bytes) {
  DeviceScope scope(device_);
  void* p = nullptr;
  // Portable: every device's copies run at page-locked speed from it.
  cuda_check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable),
             ("cudaHostAlloc of " + std::to_string(bytes) + " bytes").c_str());
  return p;
}

void GpuReducer::host_free(void* ptr) { cuda_check(cudaFreeHost(ptr), "cudaFreeHost"); }

void* GpuReducer::stream_create() {
  DeviceScope scope(device_);
  cudaStream_t s = nullptr;
  // Non-blocking: the legacy default stream of other threads must not
  // serialise the staging copies.
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

void GpuReducer::stream_destroy(void* stream) {
  cuda_check(cudaStreamDestroy(as_stream(stream)), "cudaStreamDestroy");
}

void GpuReducer::copy(void* dst, const void* src, size_t bytes, void* stream) {
  DeviceScope scope(device_);
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream)),
             "cudaMemcpyAsync");
}

void* GpuReducer::event_create() {
  DeviceScope scope(device_);
  cudaEvent_t e = nullptr;
  // No timing: cheaper to record and to query.
  cuda_check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  return e;
}

void GpuReducer::event_destroy(void* event) {
  cuda_check(cudaEventDestroy(as_event(event)), "cudaEventDestroy");
}

void GpuReducer::event_record(void* event, void* stream) {
  cuda_check(cudaEventRecord(as_event(event), as_stream(stream)), "cudaEventRecord");
}

void GpuReducer::stream_wait(void* stream, void* event) {
  cuda_check(cudaStreamWaitEvent(as_stream(stream), as_event(event), 0), "cudaStreamWaitEvent");
}

bool GpuReducer::event_done(void* event) {
  cudaError_t err = cudaEventQuery(as_event(event));
  if (err == cudaErrorNotReady) return false;
  cuda_check(err, "cudaEventQuery");
  return true;
}

// ---- Between the processes of one machine ----

namespace {

void need_length(size_t len, size_t want, const char* what) {
  if (len != want)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, std::string("gpu reducer: ") + what + " of " +
                                                     std::to_string(len) + " bytes, expected " +
                                                     std::to_string(want));
}

}  // namespace

void* GpuReducer::device_alloc(size_t bytes) {
  DeviceScope scope(device_);
  void* p = nullptr;
  cuda_check(cudaMalloc(&p, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
  return p;
}

void GpuReducer::device_free(void* ptr) {
  DeviceScope scope(device_);
  cuda_check(cudaFree(ptr), "cudaFree");
}

size_t GpuReducer::ipc_export(const void* ptr, void* handle_out, size_t capacity) {
  static_assert(sizeof(cudaIpcMemHandle_t) <= CARAVAN_REDUCER_MAX_IPC_HANDLE_V1,
                "a CUDA IPC handle fits the ABI's bound");
  DeviceScope scope(device_);
  cudaIpcMemHandle_t h;
  cuda_check(cudaIpcGetMemHandle(&h, const_cast<void*>(ptr)), "cudaIpcGetMemHandle");
  std::memcpy(handle_out, &h, sizeof h);
  return sizeof h;
}

void* GpuReducer::ipc_open(const void* handle, size_t len) {
  need_length(len, sizeof(cudaIpcMemHandle_t), "an IPC memory handle");
  DeviceScope scope(device_);
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle, sizeof h);
  void* p = nullptr;
  // Peer access is turned on when the memory lives on another GPU of the machine.
  cuda_check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  return p;
}

void GpuReducer::ipc_close(void* ptr) {
  DeviceScope scope(device_);
  cuda_check(cudaIpcCloseMemHandle(ptr), "cudaIpcCloseMemHandle");
}

void* GpuReducer::ipc_event_create(void* handle_out, size_t capacity, size_t* len) {
  static_assert(sizeof(cudaIpcEventHandle_t) <= CARAVAN_REDUCER_MAX_IPC_HANDLE_V1,
                "a CUDA IPC event handle fits the ABI's bound");
  DeviceScope scope(device_);
  cudaEvent_t e = nullptr;
  // CUDA requires interprocess events to record no timing.
  cuda_check(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming),
             "cudaEventCreate (interprocess)");
  cudaIpcEventHandle_t h;
  cudaError_t err = cudaIpcGetEventHandle(&h, e);
  if (err != cudaSuccess) {
    cudaEventDestroy(e);
    cuda_check(err, "cudaIpcGetEventHandle");
  }
  std::memcpy(handle_out, &h, sizeof h);
  *len = sizeof h;
  return e;
}

void* GpuReducer::ipc_event_open(const void* handle, size_t len) {
  need_length(len, sizeof(cudaIpcEventHandle_t), "an IPC event handle");
  DeviceScope scope(device_);
  cudaIpcEventHandle_t h;
  std::memcpy(&h, handle, sizeof h);
  cudaEvent_t e = nullptr;
  cuda_check(cudaIpcOpenEventHandle(&e, h), "cudaIpcOpenEventHandle");
  return e;
}

}  // namespace caravan::reducer_gpu
