/* Element sizes of caravan_dtype, for the C worker programs (which see
 * only the public API, where the engine's table is not). */
#ifndef CARAVAN_TEST_PROGRAMS_DTYPE_BYTES_H
#define CARAVAN_TEST_PROGRAMS_DTYPE_BYTES_H

#include <caravan/dtype.h>
#include <stddef.h>

static inline size_t dtype_bytes(caravan_dtype t) {
  switch (t) {
    case CARAVAN_FLOAT64: case CARAVAN_INT64: return 8;
    case CARAVAN_FLOAT32: case CARAVAN_INT32: return 4;
    case CARAVAN_FLOAT16: case CARAVAN_BFLOAT16: return 2;
    default: return 1;
  }
}

#endif
