#include "numerics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace caravan::conformance {

const DType kDTypes[CARAVAN_DTYPE_COUNT] = {
    {CARAVAN_FLOAT32, "float32", 4, true, 23, 8}, {CARAVAN_FLOAT64, "float64", 8, true, 52, 11},
    {CARAVAN_FLOAT16, "float16", 2, true, 10, 5}, {CARAVAN_UINT8, "uint8", 1, false, 0, 0},
    {CARAVAN_INT32, "int32", 4, false, 0, 0},     {CARAVAN_INT8, "int8", 1, false, 0, 0},
    {CARAVAN_INT64, "int64", 8, false, 0, 0},     {CARAVAN_BFLOAT16, "bfloat16", 2, true, 7, 8},
};

uint64_t mask_of(const DType& t) { return t.size == 8 ? ~0ull : (1ull << (8 * t.size)) - 1; }
uint64_t sign_bit(const DType& t) { return 1ull << (8 * t.size - 1); }
uint64_t exp_mask(const DType& t) { return ((1ull << t.exp_bits) - 1) << t.mant_bits; }
static uint64_t mant_mask(const DType& t) { return (1ull << t.mant_bits) - 1; }

bool is_nan(const DType& t, uint64_t b) {
  return t.is_float && (b & exp_mask(t)) == exp_mask(t) && (b & mant_mask(t)) != 0;
}
bool is_quiet_nan(const DType& t, uint64_t b) {
  return is_nan(t, b) && (b >> (t.mant_bits - 1) & 1);
}
bool is_inf(const DType& t, uint64_t b) {
  return t.is_float && (b & ~sign_bit(t) & mask_of(t)) == exp_mask(t);
}

static double decode(const DType& t, uint64_t b) {
  int bias = (1 << (t.exp_bits - 1)) - 1;
  uint64_t mant = b & mant_mask(t);
  uint64_t e = (b & exp_mask(t)) >> t.mant_bits;
  double sign = (b & sign_bit(t)) ? -1.0 : 1.0;
  if (e == (1ull << t.exp_bits) - 1) return mant ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(mant), 1 - bias - t.mant_bits);
  return sign * std::ldexp(static_cast<double>(mant | (1ull << t.mant_bits)),
                           static_cast<int>(e) - bias - t.mant_bits);
}

// The 16-bit types are looked up: the big cases decode millions of them.
static const std::vector<float>& half_table(const DType& t) {
  auto build = [](const DType& d) {
    std::vector<float> v(65536);
    for (uint64_t b = 0; b < v.size(); ++b) v[b] = static_cast<float>(decode(d, b));
    return v;
  };
  static const std::vector<float> f16 = build(kDTypes[CARAVAN_FLOAT16]);
  static const std::vector<float> bf16 = build(kDTypes[CARAVAN_BFLOAT16]);
  return t.id == CARAVAN_FLOAT16 ? f16 : bf16;
}

double value(const DType& t, uint64_t b) {
  if (t.id == CARAVAN_FLOAT32) {
    float f;
    uint32_t u = static_cast<uint32_t>(b);
    std::memcpy(&f, &u, 4);
    return f;
  }
  if (t.id == CARAVAN_FLOAT64) {
    double d;
    std::memcpy(&d, &b, 8);
    return d;
  }
  return half_table(t)[b & 0xffff];
}

// Scales |x| so that the type's significand is an integer, rounds that with
// nearbyint (nearest-even in the default mode), and reassembles the bits.
static uint64_t round_small(const DType& t, double x) {
  uint64_t sign = std::signbit(x) ? sign_bit(t) : 0;
  double a = std::fabs(x);
  if (a == 0) return sign;
  if (std::isinf(a)) return sign | exp_mask(t);
  int bias = (1 << (t.exp_bits - 1)) - 1;
  int e;
  std::frexp(a, &e);
  int exponent = std::max(e - 1, 1 - bias);
  auto q = static_cast<uint64_t>(std::nearbyint(std::ldexp(a, t.mant_bits - exponent)));
  if (q == 2ull << t.mant_bits) {  // rounded up to the next binade
    q >>= 1;
    ++exponent;
  }
  if (exponent > bias) return sign | exp_mask(t);
  if (q < (1ull << t.mant_bits)) return sign | q;  // subnormal
  return sign | (static_cast<uint64_t>(exponent + bias) << t.mant_bits) | (q & mant_mask(t));
}

uint64_t encode(const DType& t, double x) {
  if (std::isnan(x)) return kAnyNaN;
  if (t.id == CARAVAN_FLOAT64) {
    uint64_t u;
    std::memcpy(&u, &x, 8);
    return u;
  }
  if (t.id == CARAVAN_FLOAT32) {
    float f = static_cast<float>(x);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  return round_small(t, x);
}

uint64_t ref_sum(const DType& t, const uint64_t* column, size_t n) {
  if (!t.is_float) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += column[i];
    return s & mask_of(t);
  }
  if (t.id == CARAVAN_FLOAT64) {
    double acc = value(t, column[0]);
    for (size_t i = 1; i < n; ++i) acc += value(t, column[i]);
    return encode(t, acc);
  }
  auto acc = static_cast<float>(value(t, column[0]));
  for (size_t i = 1; i < n; ++i) acc += static_cast<float>(value(t, column[i]));
  return encode(t, acc);
}

uint64_t ref_scale(const DType& t, uint64_t x, double factor) {
  if (t.id == CARAVAN_FLOAT64) return encode(t, value(t, x) * factor);
  float p = static_cast<float>(value(t, x)) * static_cast<float>(factor);
  return encode(t, p);
}

uint64_t random_element(const DType& t, Rng& rng) {
  uint64_t r = rng.next();
  if (!t.is_float) return r & mask_of(t);
  uint64_t mant = r & mant_mask(t);
  uint64_t sign = (r >> 62 & 1) ? sign_bit(t) : 0;
  uint64_t bias = (1ull << (t.exp_bits - 1)) - 1;
  uint64_t e;
  switch (rng.next() % 4) {
    case 0:
      return r & mask_of(t);
    case 1:
      e = rng.next() % 4;
      break;  // subnormals and the smallest normals
    default:
      e = bias - 8 + rng.next() % 17;
      break;
  }
  return sign | (e << t.mant_bits) | mant;
}

std::vector<uint64_t> special_values(const DType& t) {
  uint64_t m = mask_of(t), s = sign_bit(t);
  if (!t.is_float) return {0, 1, m, s, s - 1, s + 1, m - 1, 0x55 & m};
  uint64_t bias = (1ull << (t.exp_bits - 1)) - 1;
  uint64_t one = bias << t.mant_bits;
  uint64_t half_ulp_of_one = (bias - t.mant_bits - 1) << t.mant_bits;  // 1 + this is a tie
  uint64_t inf = exp_mask(t), max = inf - 1, min_normal = 1ull << t.mant_bits;
  uint64_t qnan = inf | (1ull << (t.mant_bits - 1)), snan = inf | 1;
  return {
      0,   s,       one, s | one, one + 1, half_ulp_of_one, 1,   s | 1, min_normal - 1, min_normal,
      max, s | max, inf, s | inf, qnan,    s | qnan,        snan};
}

std::string hex(uint64_t bits) {
  if (bits == kAnyNaN) return "a NaN";
  char s[32];
  std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(bits));
  return s;
}

}  // namespace caravan::conformance
