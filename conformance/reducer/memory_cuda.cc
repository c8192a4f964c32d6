// GPU memory for reducers that report CAP_DEVICE_MEMORY; built only when the
// CUDA toolkit is found. Work goes on a stream of its own, so a reducer that
// ignores the stream it is given, or forgets to enqueue on it, shows up.
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "memory.h"

namespace caravan::conformance {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class DeviceMemory : public Memory {
 public:
  DeviceMemory() {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~DeviceMemory() override { cudaStreamDestroy(stream_); }
  bool host_visible() const override { return false; }
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void to_device(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
    // From pageable memory cudaMemcpy may return before its last bytes
    // land, and the suite's stream does not wait for the legacy stream:
    // without this the reducer could read a tail still in flight (seen on
    // an H200: wrong elements in the last 64 bytes of 1 MiB arrays).
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the copy to the device");
  }
  void to_host(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
  }
  void* stream() override { return stream_; }
  std::string synchronize() override {
    cudaError_t e = cudaStreamSynchronize(stream_);
    return e == cudaSuccess ? "" : std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e);
  }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Memory> device_memory(std::string* why_not) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    *why_not = std::string("no CUDA device: ") +
               (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none");
    return nullptr;
  }
  return std::make_unique<DeviceMemory>();
}

}  // namespace caravan::conformance
