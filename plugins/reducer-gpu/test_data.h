// Inputs and comparisons shared by the GPU reducer's tests, by caravan_dtype
// value (0..7).
#ifndef CARAVAN_REDUCER_GPU_TEST_DATA_H
#define CARAVAN_REDUCER_GPU_TEST_DATA_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace caravan::reducer_gpu::test {

struct TypeInfo {
  const char* name;
  size_t size;
  int mant_bits;  // 0 for integers
  int exp_bits;
};

inline const TypeInfo& info(unsigned dt) {
  static const TypeInfo kInfo[8] = {
      {"float32", 4, 23, 8}, {"float64", 8, 52, 11}, {"float16", 2, 10, 5}, {"uint8", 1, 0, 0},
      {"int32", 4, 0, 0},    {"int8", 1, 0, 0},      {"int64", 8, 0, 0},    {"bfloat16", 2, 7, 8}};
  return kInfo[dt];
}

struct Rng {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// Random bits; for floats mostly values with few significant bits, so sums are
// neither all NaN nor all rounding, with NaN, inf and subnormals mixed in.
inline void fill(unsigned char* p, size_t count, unsigned dt, Rng& rng) {
  const TypeInfo& t = info(dt);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = rng.next();
    if (t.mant_bits && rng.next() % 16 != 0) {
      // clear most of the exponent and low mantissa: moderate magnitudes
      int total = static_cast<int>(8 * t.size);
      uint64_t exp_field = (bits >> t.mant_bits) & ((1ull << (t.exp_bits - 2)) - 1);
      uint64_t bias_low = (1ull << (t.exp_bits - 1)) - 4;  // around 2^-3 .. 2^(2^(e-2))
      uint64_t e = (bias_low + exp_field % 16) << t.mant_bits;
      uint64_t m = bits & (((1ull << t.mant_bits) - 1) & ~((1ull << (t.mant_bits / 2)) - 1));
      uint64_t sign = (bits >> 40 & 1) << (total - 1);
      bits = sign | e | m;
    }
    std::memcpy(p + i * t.size, &bits, t.size);
  }
}

inline bool is_nan(const unsigned char* p, unsigned dt) {
  const TypeInfo& t = info(dt);
  if (!t.mant_bits) return false;
  uint64_t b = 0;
  std::memcpy(&b, p, t.size);
  uint64_t e = (b >> t.mant_bits) & ((1ull << t.exp_bits) - 1);
  return e == (1ull << t.exp_bits) - 1 && (b & ((1ull << t.mant_bits) - 1)) != 0;
}

// Bit-equal, except that any NaN matches any NaN: IEEE 754 fixes no payload,
// and the GPU's conversions give the canonical one where the CPU keeps it.
inline bool same(const unsigned char* x, const unsigned char* y, unsigned dt) {
  return std::memcmp(x, y, info(dt).size) == 0 || (is_nan(x, dt) && is_nan(y, dt));
}

}  // namespace caravan::reducer_gpu::test

#endif  // CARAVAN_REDUCER_GPU_TEST_DATA_H
