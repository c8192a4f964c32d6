// The table of element-wise kernels one instruction-set family provides.
// The ABI entry points only choose a table at init and split work into
// blocks; everything that touches elements lives behind these pointers.
#ifndef CARAVAN_REDUCER_CPU_KERNELS_H
#define CARAVAN_REDUCER_CPU_KERNELS_H

#include <cstddef>

#include "caravan/dtype.h"

namespace caravan::reducer_cpu {

// dst = a + b; dst may be a or b.
using Add2Fn = void (*)(void* dst, const void* a, const void* b, size_t n);
// data *= factor.
using ScaleFn = void (*)(void* data, size_t n, double factor);
// The 16-bit float types sum many sources in a float32 accumulator and round
// once, so sum_many is as exact as the float32 sum it stands for.
using AccInitFn = void (*)(float* acc, const void* a, const void* b, size_t n);
using AccAddFn = void (*)(float* acc, const void* src, size_t n);
using AccStoreFn = void (*)(void* dst, const float* acc, size_t n);

struct KernelSet {
  const char* name;
  Add2Fn add2[CARAVAN_DTYPE_COUNT];
  ScaleFn scale[CARAVAN_DTYPE_COUNT];       // NULL for the integer types
  AccInitFn acc_init[CARAVAN_DTYPE_COUNT];  // non-NULL for float16 and bfloat16 only
  AccAddFn acc_add[CARAVAN_DTYPE_COUNT];
  AccStoreFn acc_store[CARAVAN_DTYPE_COUNT];
};

// Each returns NULL when the family was not compiled in for this target; the
// caller still has to check that the running CPU supports it.
const KernelSet* portable_kernels();
const KernelSet* avx2_kernels();
const KernelSet* avx512_kernels();

}  // namespace caravan::reducer_cpu

#endif  // CARAVAN_REDUCER_CPU_KERNELS_H
