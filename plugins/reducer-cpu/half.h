// Conversions between float32 and the two 16-bit float formats, rounding to
// nearest-even. The SIMD kernels use these for their tails, so every path
// must give bit-identical results to the hardware conversions, NaNs included.
#ifndef CARAVAN_REDUCER_CPU_HALF_H
#define CARAVAN_REDUCER_CPU_HALF_H

#include <cstdint>
#include <cstring>

namespace caravan::reducer_cpu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// IEEE binary16 -> binary32 is exact; only subnormals need renormalising,
// because binary32 has the exponent range to hold them as normals.
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) {
    // Quieting matches F16C, so the NaN that reaches a later add is the same.
    uint32_t quiet = mant ? 0x00400000u : 0u;
    return bits_float(sign | 0x7f800000u | (mant << 13) | quiet);
  }
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    int shift = __builtin_clz(mant) - 21;  // moves the leading one to bit 10
    mant = (mant << shift) & 0x3ffu;
    exp = static_cast<uint32_t>(1 - shift);  // may wrap; 112 is added below
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u)  // NaN: keep the top payload bits and force quiet, as F16C does
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u)  // >= 65520, the midpoint past 65504: ties go to the even inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {  // normal half: rebias, then round 23 mantissa bits to 10
    uint32_t r = ax - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);  // a carry into the exponent is the right answer
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  if (ax <= 0x33000000u)  // <= 2^-25, half the smallest subnormal: ties go to even zero
    return sign;
  // Subnormal result: the integer mantissa is |f| * 2^24, rounded. A result of
  // 1024 is the smallest normal, whose bit pattern is exactly 0x0400.
  uint32_t e = ax >> 23;
  uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;  // 14..24 here
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

inline float bf16_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = float_bits(f);
  // Without this the rounding add could carry a NaN's payload into infinity.
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace caravan::reducer_cpu

#endif  // CARAVAN_REDUCER_CPU_HALF_H
