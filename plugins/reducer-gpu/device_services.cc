// The GPU reducer's device memory services (reducer ABI 1.1): what the
// engine needs to carry a CUDA tensor through host memory. Every call is
// asynchronous on the device; none waits for device work.
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
  if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged)
    return attr.device;
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

}  // namespace caravan::reducer_gpu
