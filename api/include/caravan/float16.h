/* Conversions between float32 and the two 16-bit float dtypes
 * (CARAVAN_FLOAT16, IEEE binary16; CARAVAN_BFLOAT16), rounding to nearest
 * even. The CPU reducer's SIMD kernels use these for their tails, so every
 * result, NaNs included, is bit-identical to the x86 hardware conversions
 * (F16C); the engine logs values with them, so a logged value is the one
 * that was summed. Inline, so nothing needs linking; none fails or blocks.
 *
 * Compiles as C99 and as C++. */
#ifndef CARAVAN_FLOAT16_H
#define CARAVAN_FLOAT16_H

#include <stdint.h>
#include <string.h>

/* binary16 to binary32 is exact: binary32 holds every binary16 value,
 * subnormals as normals. A NaN comes back quiet, as F16C makes it, so the
 * NaN that reaches a later add is the same. */
static inline float caravan_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  float f;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
  } else if (exp == 0 && mant == 0) {
    bits = sign;
  } else if (exp == 0) {
    /* Subnormal: move the leading one up to the implicit bit (bit 10),
     * lowering the exponent once for each place it moved. */
    uint32_t e = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t caravan_f32_to_f16(float f) {
  uint32_t x, ax, e, m, shift, q, rem, halfway;
  uint16_t sign;
  memcpy(&x, &f, sizeof x);
  sign = (uint16_t)((x >> 16) & 0x8000u);
  ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: keep the top payload bits and force quiet, as F16C does */
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) /* >= 65520, the midpoint past 65504: ties go to the even inf */
    return (uint16_t)(sign | 0x7c00u);
  if (ax >= 0x38800000u) { /* normal half: rebias, then round 23 mantissa bits to 10 */
    uint32_t r = ax - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u); /* a carry into the exponent is the right answer */
    return (uint16_t)(sign | (r >> 13));
  }
  if (ax <= 0x33000000u) /* <= 2^-25, half the smallest subnormal: ties go to even zero */
    return sign;
  /* Subnormal result: the integer mantissa is |f| * 2^24, rounded. A result
   * of 1024 is the smallest normal, whose bit pattern is exactly 0x0400. */
  e = ax >> 23;
  m = (ax & 0x7fffffu) | 0x800000u;
  shift = 126u - e; /* 14..24 here */
  q = m >> shift;
  rem = m & ((1u << shift) - 1u);
  halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return (uint16_t)(sign | q);
}

/* Exact: bfloat16 is the top half of a binary32. */
static inline float caravan_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t caravan_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  /* Without this the rounding add could carry a NaN's payload into infinity. */
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

#endif /* CARAVAN_FLOAT16_H */
