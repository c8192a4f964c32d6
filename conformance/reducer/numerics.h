// The element types and the arithmetic reducer_v1.h promises, written from
// the formats' definitions so that they share no code with any plugin.
// Elements travel as raw bit patterns in a uint64_t.
#ifndef CARAVAN_TESTS_REDUCER_CONFORMANCE_NUMERICS_H
#define CARAVAN_TESTS_REDUCER_CONFORMANCE_NUMERICS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "caravan/dtype.h"

namespace caravan::conformance {

struct DType {
  caravan_dtype id;
  const char* name;
  size_t size;
  bool is_float;
  int mant_bits;  // floats: stored mantissa bits
  int exp_bits;
};

extern const DType kDTypes[CARAVAN_DTYPE_COUNT];  // indexed by caravan_dtype

uint64_t mask_of(const DType& t);
uint64_t sign_bit(const DType& t);
uint64_t exp_mask(const DType& t);
bool is_nan(const DType& t, uint64_t bits);
bool is_quiet_nan(const DType& t, uint64_t bits);
bool is_inf(const DType& t, uint64_t bits);

// The exact value of a float element (NaN for every NaN pattern).
double value(const DType& t, uint64_t bits);

// A value already exact in float32 (or float64 for that type) rounded to the
// type, to nearest-even; NaN gives kAnyNaN.
uint64_t encode(const DType& t, double x);

// A reference result that only says "some NaN".
constexpr uint64_t kAnyNaN = ~0ull;

// srcs[0] + srcs[1] + ... in order: integers wrap, float64 adds in float64,
// the rest accumulate in float32 and the 16-bit types round once at the end.
uint64_t ref_sum(const DType& t, const uint64_t* column, size_t n);

// x * factor: float64 in float64; the rest in float32, factor rounded first.
uint64_t ref_scale(const DType& t, uint64_t x, double factor);

// Raw patterns (NaN, inf, subnormals included) mixed with tiny values and
// values near 1 whose sums really round.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};
uint64_t random_element(const DType& t, Rng& rng);

// Notable values of a float type (zeros, ones, the extremes, subnormals,
// infinities, quiet and signalling NaNs), or the edges of an integer type.
std::vector<uint64_t> special_values(const DType& t);

std::string hex(uint64_t bits);

}  // namespace caravan::conformance

#endif  // CARAVAN_TESTS_REDUCER_CONFORMANCE_NUMERICS_H
