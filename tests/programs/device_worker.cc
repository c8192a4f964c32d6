// A worker program on the public C API with tensors in CUDA device memory
// (C API 1.2): every round it writes each tensor on a stream of its own
// (cleared, then filled from page-locked memory, without synchronising),
// hands it to caravan_push_pull_device_async on that stream, and checks the
// sums on the device against sums made here; then a broadcast from a root
// that changes every round. Values are small integers, so every dtype sums
// them exactly and a wrong element is a wrong answer, not rounding.
// Also checks that host memory given to the device calls is refused,
// naming the tensor.
// Usage: device_worker [rounds]
//        device_worker --probe   (exit 0 with a CUDA device, else 77)
// Exit 0 when everything was right, 1 naming the first wrong value, 77
// (skipped) when no CUDA device is visible.
#include <caravan/caravan.h>
#include <caravan/float16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Tensor {
  std::string name;
  size_t count;
  caravan_dtype dtype;
  void* device = nullptr;
  void* pinned = nullptr;  // the values written, page-locked
  caravan_handle handle = nullptr;
};

// Element i of worker `rank` in `round`: -8..8.
int value(int rank, int round, size_t i) {
  return static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3 + static_cast<size_t>(round)) %
                          17) -
         8;
}

void store(void* p, size_t i, caravan_dtype t, double v) {
  switch (t) {
    case CARAVAN_FLOAT32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case CARAVAN_FLOAT64:
      static_cast<double*>(p)[i] = v;
      break;
    case CARAVAN_FLOAT16:
      static_cast<uint16_t*>(p)[i] = caravan_f32_to_f16(static_cast<float>(v));
      break;
    case CARAVAN_BFLOAT16:
      static_cast<uint16_t*>(p)[i] = caravan_f32_to_bf16(static_cast<float>(v));
      break;
    case CARAVAN_INT32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case CARAVAN_INT64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    default:
      std::abort();
  }
}

double load(const void* p, size_t i, caravan_dtype t) {
  switch (t) {
    case CARAVAN_FLOAT32:
      return static_cast<const float*>(p)[i];
    case CARAVAN_FLOAT64:
      return static_cast<const double*>(p)[i];
    case CARAVAN_FLOAT16:
      return caravan_f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CARAVAN_BFLOAT16:
      return caravan_bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case CARAVAN_INT32:
      return static_cast<const int32_t*>(p)[i];
    case CARAVAN_INT64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    default:
      std::abort();
  }
}

bool cuda_ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::printf("device_worker: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

int fail_rc(int rc, const char* what) {
  std::printf("device_worker: FAIL %s: rc %d: %s\n", what, rc, caravan_strerror(rc));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line: a launcher that stops the job when one worker fails
  // still shows why it failed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool probe = argc > 1 && std::strcmp(argv[1], "--probe") == 0;
  int rounds = argc > 1 && !probe ? std::atoi(argv[1]) : 3;
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    std::printf("device_worker: SKIP: no CUDA device visible (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 77;
  }
  if (probe) return 0;
  int rc = caravan_init();
  if (rc != 0) return fail_rc(rc, "caravan_init");
  int rank = caravan_rank(), size = caravan_size();
  if (!cuda_ok(cudaSetDevice(caravan_local_rank() % devices), "cudaSetDevice")) return 1;
  cudaStream_t stream;
  if (!cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"))
    return 1;

  // Sizes around the 4096000-byte partition: one element, one partition,
  // two partitions, nine.
  std::vector<Tensor> tensors;
  const size_t counts[] = {1, 1000, (1u << 20) + 3, 9u << 20};
  for (size_t c : counts) tensors.push_back({"f32." + std::to_string(c), c, CARAVAN_FLOAT32});
  for (caravan_dtype t :
       {CARAVAN_FLOAT16, CARAVAN_BFLOAT16, CARAVAN_INT32, CARAVAN_FLOAT64, CARAVAN_INT64})
    tensors.push_back({std::string(caravan_dtype_name(t)) + ".3M", 3u << 20, t});
  for (Tensor& t : tensors) {
    size_t bytes = t.count * caravan_dtype_size(t.dtype);
    if (!cuda_ok(cudaMalloc(&t.device, bytes), "cudaMalloc") ||
        !cuda_ok(cudaMallocHost(&t.pinned, bytes), "cudaMallocHost"))
      return 1;
  }
  std::vector<unsigned char> got;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < tensors.size(); ++k) {
      Tensor& t = tensors[k];
      size_t bytes = t.count * caravan_dtype_size(t.dtype);
      for (size_t i = 0; i < t.count; ++i) store(t.pinned, i, t.dtype, value(rank, round, i));
      // Queued, not done, when push_pull is called: it must wait for them.
      cudaMemsetAsync(t.device, 0xff, bytes, stream);
      cudaMemcpyAsync(t.device, t.pinned, bytes, cudaMemcpyHostToDevice, stream);
      rc = caravan_push_pull_device_async(t.name.c_str(), t.device, t.count, t.dtype,
                                          static_cast<int>(k), stream, &t.handle);
      if (rc != 0) return fail_rc(rc, t.name.c_str());
    }
    for (Tensor& t : tensors) {
      rc = caravan_wait(t.handle);
      if (rc != 0) return fail_rc(rc, t.name.c_str());
      size_t bytes = t.count * caravan_dtype_size(t.dtype);
      got.resize(bytes);
      if (!cuda_ok(cudaMemcpy(got.data(), t.device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy"))
        return 1;
      for (size_t i = 0; i < t.count; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += value(r, round, i);
        double have = load(got.data(), i, t.dtype);
        if (have != want) {
          std::printf("device_worker: FAIL rank %d round %d: %s[%zu] = %g, expected %g\n", rank,
                      round, t.name.c_str(), i, have, want);
          return 1;
        }
      }
    }
    // Broadcast: the root's values reach every worker's device tensor.
    int root = round % size;
    Tensor& b = tensors[2];
    std::string name = "bcast." + b.name;
    for (size_t i = 0; i < b.count; ++i) store(b.pinned, i, b.dtype, value(rank, round, i));
    cudaMemcpyAsync(b.device, b.pinned, b.count * 4, cudaMemcpyHostToDevice, stream);
    rc = caravan_broadcast_device(name.c_str(), b.device, b.count, b.dtype, root, 0, stream);
    if (rc != 0) return fail_rc(rc, name.c_str());
    got.resize(b.count * 4);
    cudaMemcpy(got.data(), b.device, b.count * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < b.count; ++i)
      if (load(got.data(), i, b.dtype) != value(root, round, i)) {
        std::printf(
            "device_worker: FAIL rank %d round %d: broadcast from %d: [%zu] = %g, "
            "expected %d\n",
            rank, round, root, i, load(got.data(), i, b.dtype), value(root, round, i));
        return 1;
      }
  }
  // Host memory given to the device call: refused, naming the tensor.
  float host[4] = {0};
  rc = caravan_push_pull_device("host.given", host, 4, CARAVAN_FLOAT32, 0, stream);
  if (rc != CARAVAN_ERR_INVALID_ARGUMENT || !std::strstr(caravan_strerror(rc), "host.given"))
    return fail_rc(rc, "host memory to caravan_push_pull_device (expected INVALID_ARGUMENT)");
  std::printf(
      "device_worker: rank %d of %d: %zu device tensors x %d rounds summed exactly, "
      "broadcasts exact, host memory refused (%s)\n",
      rank, size, tensors.size(), rounds, caravan_strerror(rc));
  for (Tensor& t : tensors) {
    cudaFree(t.device);
    cudaFreeHost(t.pinned);
  }
  rc = caravan_shutdown();
  return rc == 0 ? 0 : fail_rc(rc, "caravan_shutdown");
}
