/* Caravan element types, shared by the public API and the plugin ABI.
 * The numeric values are part of both contracts and never change. */
#ifndef CARAVAN_DTYPE_H
#define CARAVAN_DTYPE_H

#include <stddef.h>

typedef enum {
  CARAVAN_FLOAT32 = 0,
  CARAVAN_FLOAT64 = 1,
  CARAVAN_FLOAT16 = 2,
  CARAVAN_UINT8 = 3,
  CARAVAN_INT32 = 4,
  CARAVAN_INT8 = 5,
  CARAVAN_INT64 = 6,
  CARAVAN_BFLOAT16 = 7,
  /* Not a dtype: makes the enum int-sized with every int32 value valid, so
   * a plugin can receive any number and answer UNSUPPORTED without
   * undefined behaviour. */
  CARAVAN_DTYPE_FORCE_INT32 = 0x7fffffff
} caravan_dtype;

/* One past the largest valid caravan_dtype value. */
#define CARAVAN_DTYPE_COUNT 8

/* The size in bytes of one element of `dtype`, or 0 for a number that is no
 * caravan_dtype (it takes an int so that a value read from a message or a
 * plugin argument can be checked with it). Never fails, never blocks.
 * Inline, so the engine, plugins and programs read the same table without
 * linking anything. */
static inline size_t caravan_dtype_size(int dtype) {
  switch (dtype) {
    case CARAVAN_FLOAT32:
      return 4;
    case CARAVAN_FLOAT64:
      return 8;
    case CARAVAN_FLOAT16:
      return 2;
    case CARAVAN_UINT8:
      return 1;
    case CARAVAN_INT32:
      return 4;
    case CARAVAN_INT8:
      return 1;
    case CARAVAN_INT64:
      return 8;
    case CARAVAN_BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

/* The dtype's name as messages spell it ("float32", ..., "bfloat16"), or
 * "invalid" for a number that is no caravan_dtype. Never NULL; the string
 * is static. Never blocks. */
static inline const char* caravan_dtype_name(int dtype) {
  switch (dtype) {
    case CARAVAN_FLOAT32:
      return "float32";
    case CARAVAN_FLOAT64:
      return "float64";
    case CARAVAN_FLOAT16:
      return "float16";
    case CARAVAN_UINT8:
      return "uint8";
    case CARAVAN_INT32:
      return "int32";
    case CARAVAN_INT8:
      return "int8";
    case CARAVAN_INT64:
      return "int64";
    case CARAVAN_BFLOAT16:
      return "bfloat16";
    default:
      return "invalid";
  }
}

#endif /* CARAVAN_DTYPE_H */
