// The __global__ wrappers around kernels.cuh, their launch geometry, and the
// dispatch from caravan_dtype to element type.
#include <algorithm>
#include <cstdint>

#include "caravan/dtype.h"
#include "kernels.cuh"
#include "kernels.h"

namespace caravan::reducer_gpu {
namespace {

// Sources one sum_many launch carries in its parameters: the small set keeps
// the common launch cheap; the large one stays far under the 32 KiB that
// sm_90 allows for kernel parameters.
constexpr int kFewSrcs = 16;
constexpr int kManySrcs = 1024;

template <class Op>
__global__ void elementwise(const Op op, const Layout l) {
  size_t threads = static_cast<size_t>(gridDim.x) * blockDim.x;
  run(op, l, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x, threads);
}

template <class Op>
cudaError_t launch(const Op& op, const Layout& l, const Grid& grid, cudaStream_t stream) {
  size_t work = std::max(l.nvec, l.count - l.nvec * Op::kLanes);
  if (work == 0) return cudaSuccess;
  size_t per_block = static_cast<size_t>(grid.block_threads);
  size_t blocks =
      std::min((work + per_block - 1) / per_block, static_cast<size_t>(grid.max_blocks));
  elementwise<Op><<<static_cast<unsigned>(blocks), grid.block_threads, 0, stream>>>(op, l);
  return cudaGetLastError();
}

// Calls body(E{}) with the element type of dtype dt.
template <class Body>
cudaError_t with_elem(unsigned dt, Body&& body) {
  switch (dt) {
    case 0:
      return body(Same<float>{});
    case 1:
      return body(Same<double>{});
    case 2:
      return body(F16{});
    case 3:
      return body(Same<uint8_t>{});
    case 4:
      return body(Same<uint32_t>{});
    case 5:
      return body(Same<uint8_t>{});
    case 6:
      return body(Same<uint64_t>{});
    case 7:
      return body(BF16{});
    default:
      return cudaErrorInvalidValue;
  }
}

template <class E, int N>
cudaError_t sum_chunk(void* dst, const typename E::Acc* acc_in, typename E::Acc* acc_out,
                      const void* const* srcs, size_t num, size_t count, const Grid& grid,
                      cudaStream_t stream) {
  SumMany<E, N> op{};
  op.dst = static_cast<Byte*>(dst);
  op.acc_in = acc_in;
  op.acc_out = acc_out;
  op.num = static_cast<int>(num);
  for (size_t s = 0; s < num; ++s) op.src[s] = static_cast<const Byte*>(srcs[s]);
  Layout l = plan(count, sizeof(typename E::Storage), dst, srcs, num);
  op.bytewise = l.bytewise;
  return launch(op, l, grid, stream);
}

template <class E>
cudaError_t sum_many_as(void* dst, const void* const* srcs, size_t num, size_t count,
                        const Grid& grid, cudaStream_t stream) {
  if (num <= kFewSrcs)
    return sum_chunk<E, kFewSrcs>(dst, nullptr, nullptr, srcs, num, count, grid, stream);
  if (num <= kManySrcs)
    return sum_chunk<E, kManySrcs>(dst, nullptr, nullptr, srcs, num, count, grid, stream);
  // Rare: a stream-ordered accumulator keeps one rounding for the 16-bit types.
  using A = typename E::Acc;
  A* acc = nullptr;
  cudaError_t err = cudaMallocAsync(reinterpret_cast<void**>(&acc), count * sizeof(A), stream);
  if (err != cudaSuccess) return err;
  for (size_t first = 0; first < num && err == cudaSuccess; first += kManySrcs) {
    size_t n = std::min<size_t>(kManySrcs, num - first);
    bool last = first + n == num;
    err = sum_chunk<E, kManySrcs>(dst, first ? acc : nullptr, last ? nullptr : acc, srcs + first, n,
                                  count, grid, stream);
  }
  cudaError_t freed = cudaFreeAsync(acc, stream);
  return err != cudaSuccess ? err : freed;
}

// float64 scales in float64; the others in float32, the factor rounded first.
template <class E>
cudaError_t scale_as(void* data, size_t count, double factor, const Grid& grid,
                     cudaStream_t stream) {
  using A = typename E::Acc;
  Layout l = plan(count, sizeof(typename E::Storage), data, nullptr, 0);
  Scale<E> op{static_cast<Byte*>(data), static_cast<A>(factor), l.bytewise};
  return launch(op, l, grid, stream);
}

}  // namespace

cudaError_t launch_add2(unsigned dt, void* dst, const void* a, const void* b, size_t count,
                        const Grid& grid, cudaStream_t stream) {
  return with_elem(dt, [&](auto e) {
    using E = decltype(e);
    const void* srcs[] = {a, b};
    Layout l = plan(count, sizeof(typename E::Storage), dst, srcs, 2);
    Add2<E> op{static_cast<Byte*>(dst), static_cast<const Byte*>(a), static_cast<const Byte*>(b),
               l.bytewise};
    return launch(op, l, grid, stream);
  });
}

cudaError_t launch_sum_many(unsigned dt, void* dst, const void* const* srcs, size_t num,
                            size_t count, const Grid& grid, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  if (num == 1) {
    // A copy, not a widen and round, so NaN payloads pass through as on the CPU.
    if (dst == srcs[0]) return cudaSuccess;
    return cudaMemcpyAsync(dst, srcs[0], count * caravan_dtype_size(static_cast<int>(dt)),
                           cudaMemcpyDefault, stream);
  }
  return with_elem(
      dt, [&](auto e) { return sum_many_as<decltype(e)>(dst, srcs, num, count, grid, stream); });
}

bool scales(unsigned dt) { return dt == 0 || dt == 1 || dt == 2 || dt == 7; }

cudaError_t launch_scale(unsigned dt, void* data, size_t count, double factor, const Grid& grid,
                         cudaStream_t stream) {
  switch (dt) {
    case 0:
      return scale_as<Same<float>>(data, count, factor, grid, stream);
    case 1:
      return scale_as<Same<double>>(data, count, factor, grid, stream);
    case 2:
      return scale_as<F16>(data, count, factor, grid, stream);
    case 7:
      return scale_as<BF16>(data, count, factor, grid, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t check_kernel_image() {
  cudaFuncAttributes attr;
  return cudaFuncGetAttributes(&attr, elementwise<Add2<Same<float>>>);
}

}  // namespace caravan::reducer_gpu
