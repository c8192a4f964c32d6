/* Caravan element types, shared by the public API and the plugin ABI.
 * The numeric values are part of both contracts and never change. */
#ifndef CARAVAN_DTYPE_H
#define CARAVAN_DTYPE_H

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

#endif /* CARAVAN_DTYPE_H */
