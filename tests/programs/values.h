/* What the C test programs put into tensors and read back: small values
 * in every dtype (stored through float32 for the 16-bit floats, exact for
 * the integers they hold), and bytes that take every bit pattern. */
#ifndef CARAVAN_TESTS_VALUES_H
#define CARAVAN_TESTS_VALUES_H

#include <caravan/caravan.h>
#include <caravan/float16.h>
#include <stddef.h>
#include <stdint.h>

/* Byte i of tensor `tensor`'s values that `rank` gives in `round`: a hash,
 * so every bit pattern occurs, with a worker's own fingerprint in it. */
static inline uint8_t pattern_byte(int rank, int round, size_t tensor, size_t i) {
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (uint64_t)(rank + 1) * 0xBF58476D1CE4E5B9ull ^
               (uint64_t)(round + 1) * 0x94D049BB133111EBull ^ (uint64_t)tensor << 40;
  x ^= x >> 31;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 29;
  return (uint8_t)x;
}

static inline void store_value(void* p, size_t i, caravan_dtype t, double v) {
  switch (t) {
    case CARAVAN_FLOAT32:
      ((float*)p)[i] = (float)v;
      break;
    case CARAVAN_FLOAT64:
      ((double*)p)[i] = v;
      break;
    case CARAVAN_FLOAT16:
      ((uint16_t*)p)[i] = caravan_f32_to_f16((float)v);
      break;
    case CARAVAN_BFLOAT16:
      ((uint16_t*)p)[i] = caravan_f32_to_bf16((float)v);
      break;
    case CARAVAN_UINT8:
      ((uint8_t*)p)[i] = (uint8_t)v;
      break;
    case CARAVAN_INT8:
      ((int8_t*)p)[i] = (int8_t)v;
      break;
    case CARAVAN_INT32:
      ((int32_t*)p)[i] = (int32_t)v;
      break;
    case CARAVAN_INT64:
      ((int64_t*)p)[i] = (int64_t)v;
      break;
    default:
      break;
  }
}

static inline double load_value(const void* p, size_t i, caravan_dtype t) {
  switch (t) {
    case CARAVAN_FLOAT32:
      return ((const float*)p)[i];
    case CARAVAN_FLOAT64:
      return ((const double*)p)[i];
    case CARAVAN_FLOAT16:
      return caravan_f16_to_f32(((const uint16_t*)p)[i]);
    case CARAVAN_BFLOAT16:
      return caravan_bf16_to_f32(((const uint16_t*)p)[i]);
    case CARAVAN_UINT8:
      return ((const uint8_t*)p)[i];
    case CARAVAN_INT8:
      return ((const int8_t*)p)[i];
    case CARAVAN_INT32:
      return ((const int32_t*)p)[i];
    case CARAVAN_INT64:
      return (double)((const int64_t*)p)[i];
    default:
      break;
  }
  return 0;
}

#endif
