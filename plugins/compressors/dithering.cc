// dithering (stochastic quantisation, as QSGD): each element becomes its
// sign and one of byteps_compressor_k + 1 levels of |x| / norm, rounded up
// or down at random with the probabilities that keep it unbiased. Levels
// are evenly spaced (byteps_dithering_partition=0, the default) or powers
// of two (=1, "natural"); the norm is the largest magnitude
// (byteps_dithering_normalize=0, the default) or the L2 norm (=1).
// Wire: the norm, then fixed-width fields of 1 sign bit and the level.
// Draws come from the round's seed, mixed with the direction so the
// pull's rounding is independent of the push's.
#include <cmath>

#include "compressor_kit.h"

namespace caravan::compressors {
namespace {

constexpr const char* kName = "dithering";

unsigned bits_for(uint32_t max_value) {
  unsigned b = 1;
  while (b < 32 && (max_value >> b) != 0) ++b;
  return b;
}

class Dithering {
 public:
  Dithering(const TensorParams& params, caravan_dtype dtype, size_t count)
      : dtype_(dtype), count_(count) {
    by_float(dtype, kName, [](auto) { return 0; });
    double s =
        params.required_number("byteps_compressor_k", "dithering needs the number of levels");
    if (s < 1 || s > 30 || s != std::floor(s))
      TensorParams::bad("byteps_compressor_k", *params.text("byteps_compressor_k"),
                        "a whole number of levels from 1 to 30");
    levels_ = static_cast<uint32_t>(s);
    natural_ = choice(params, "byteps_dithering_partition", "0 (linear) or 1 (natural)");
    l2_ = choice(params, "byteps_dithering_normalize", "0 (max) or 1 (l2)");
    width_ = 1 + bits_for(levels_);
  }
  size_t max_bytes() const { return 8 + BitReader::words_for(count_, width_) * 8; }
  size_t compress(const void* src, void* dst, uint64_t seed, bool pull) {
    return by_float(dtype_, kName,
                    [&](auto t) { return compress_as<decltype(t)>(src, dst, mix(seed, pull)); });
  }
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t, bool) {
    expect_length(kName, len, max_bytes(), std::to_string(count_) + " elements");
    // Levels are checked first: dst stays as it was if one is out of range.
    BitReader check(static_cast<const char*>(src) + 8);
    for (size_t i = 0; i < count_; ++i)
      if ((check.get(width_) >> 1) > levels_)
        not_my_bytes(kName, "a level above byteps_compressor_k = " + std::to_string(levels_));
    by_float(dtype_, kName, [&](auto t) {
      decompress_as<decltype(t)>(src, dst, accumulate);
      return 0;
    });
  }

 private:
  static bool choice(const TensorParams& params, const char* key, const char* expected) {
    double v = params.number(key, 0);
    if (v != 0 && v != 1) TensorParams::bad(key, *params.text(key), expected);
    return v == 1;
  }
  static uint64_t mix(uint64_t seed, bool pull) {
    return pull ? seed ^ 0xA0761D6478BD642Full : seed;
  }

  double level_value(uint32_t code) const {
    if (!natural_) return static_cast<double>(code) / levels_;
    return code == 0 ? 0.0 : std::ldexp(1.0, static_cast<int>(code) - static_cast<int>(levels_));
  }
  // r = |x| / norm in [0, 1] to a level code, rounding at random so that
  // the code's expected value is r.
  uint32_t quantise(double r, Rng& rng) const {
    uint32_t lo;
    if (!natural_) {
      // Evenly spaced: up with probability y - floor(y).
      double y = r * levels_;
      lo = static_cast<uint32_t>(y);
      if (lo >= levels_) return levels_;
      return rng.uniform() < y - lo ? lo + 1 : lo;
    } else {
      int e;
      std::frexp(r, &e);  // r in [2^(e-1), 2^e)
      int code = e - 1 + static_cast<int>(levels_);
      if (r == 0) return 0;
      lo = code < 1 ? 0 : static_cast<uint32_t>(code);
      if (lo >= levels_) return levels_;
    }
    double a = level_value(lo), b = level_value(lo + 1);
    return rng.uniform() * (b - a) < r - a ? lo + 1 : lo;
  }

  template <class T>
  size_t compress_as(const void* src, void* dst, uint64_t seed) const {
    double norm = 0;
    for (size_t i = 0; i < count_; ++i) {
      double v = std::fabs(static_cast<double>(load<T>(src, i)));
      norm = l2_ ? norm + v * v : (v > norm ? v : norm);
    }
    if (l2_) norm = std::sqrt(norm);
    store<double>(dst, 0, norm);
    Rng rng(seed);
    BitWriter out(static_cast<char*>(dst) + 8);
    for (size_t i = 0; i < count_; ++i) {
      double v = static_cast<double>(load<T>(src, i));
      uint32_t code = norm > 0 ? quantise(std::fabs(v) / norm, rng) : 0;
      out.put((code << 1) | (std::signbit(v) ? 1u : 0u), width_);
    }
    return 8 + out.finish();
  }

  template <class T>
  void decompress_as(const void* src, void* dst, bool accumulate) const {
    double norm = load<double>(src, 0);
    // Every field's value, by its bits (sign lowest): a lookup per element.
    std::vector<T> value(size_t{1} << width_, T(0));
    for (uint32_t code = 0; code <= levels_; ++code) {
      T m = static_cast<T>(norm * level_value(code));
      value[code << 1] = m;
      value[(code << 1) | 1u] = -m;
    }
    BitReader in(static_cast<const char*>(src) + 8);
    for (size_t i = 0; i < count_; ++i) {
      T v = value[in.get(width_)];
      store<T>(dst, i, accumulate ? load<T>(dst, i) + v : v);
    }
  }

  caravan_dtype dtype_;
  size_t count_;
  uint32_t levels_ = 1;
  bool natural_ = false;
  bool l2_ = false;
  unsigned width_ = 2;
};

}  // namespace
}  // namespace caravan::compressors

CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<caravan::compressors::Dithering>(
    "dithering", CARAVAN_VERSION_STRING,
    "sign and a stochastically rounded level per element, unbiased (byteps_compressor_k levels)"))
