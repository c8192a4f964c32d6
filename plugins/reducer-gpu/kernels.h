// Launchers of the GPU kernels, callable from host C++ that nvcc does not
// compile. Every function enqueues on `stream` and returns the launch error.
#ifndef CARAVAN_REDUCER_GPU_KERNELS_H
#define CARAVAN_REDUCER_GPU_KERNELS_H

#include <cuda_runtime_api.h>

#include <cstddef>

namespace caravan::reducer_gpu {

struct Grid {
  int block_threads;  // threads per block
  int max_blocks;     // enough blocks to fill the device; loops cover the rest
};

// dt is a caravan_dtype already checked to be in 0..7.
cudaError_t launch_add2(unsigned dt, void* dst, const void* a, const void* b, size_t count,
                        const Grid& grid, cudaStream_t stream);
cudaError_t launch_sum_many(unsigned dt, void* dst, const void* const* srcs, size_t num,
                            size_t count, const Grid& grid, cudaStream_t stream);
// Only for the floating types: see scales().
cudaError_t launch_scale(unsigned dt, void* data, size_t count, double factor, const Grid& grid,
                         cudaStream_t stream);
bool scales(unsigned dt);

// cudaSuccess when the current device can run this build's kernels (native
// sm_90 code or the compute_90 PTX).
cudaError_t check_kernel_image();

}  // namespace caravan::reducer_gpu

#endif  // CARAVAN_REDUCER_GPU_KERNELS_H
