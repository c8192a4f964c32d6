// onebit (signSGD with an optional scale): one sign bit per element, and
// one number for the whole partition: the mean magnitude with
// byteps_compressor_onebit_scaling=true, else 1. Decoded, each element is
// +scale or -scale by its sign bit (-0.0 counts as negative). 32 times
// fewer bytes than float32; biased, so meant to run with error feedback.
#include <cmath>

#include "compressor_kit.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define CARAVAN_ONEBIT_AVX2 1
#endif

namespace caravan::compressors {
namespace {

constexpr const char* kName = "onebit";

#ifdef CARAVAN_ONEBIT_AVX2
// float32 with AVX2, the common case, at memory speed: one movemask gives
// eight sign bits. Whole 32-element words only; the caller does the tail.
// Returns the sum of |x| (each word's lanes summed in float, four values a
// lane, then in double).
__attribute__((target("avx2"))) double pack_avx2(const char* src, size_t words, char* dst) {
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  for (size_t w = 0; w < words; ++w) {
    const float* p = reinterpret_cast<const float*>(src + w * 128);
    __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
    __m256 c = _mm256_loadu_ps(p + 16), d = _mm256_loadu_ps(p + 24);
    uint32_t word = static_cast<uint32_t>(_mm256_movemask_ps(a)) |
                    static_cast<uint32_t>(_mm256_movemask_ps(b)) << 8 |
                    static_cast<uint32_t>(_mm256_movemask_ps(c)) << 16 |
                    static_cast<uint32_t>(_mm256_movemask_ps(d)) << 24;
    std::memcpy(dst + w * 4, &word, 4);
    __m256 s =
        _mm256_add_ps(_mm256_add_ps(_mm256_and_ps(a, magnitude), _mm256_and_ps(b, magnitude)),
                      _mm256_add_ps(_mm256_and_ps(c, magnitude), _mm256_and_ps(d, magnitude)));
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(s)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(s, 1)));
  }
  double out[4];
  _mm256_storeu_pd(out, _mm256_add_pd(lo, hi));
  return (out[0] + out[1]) + (out[2] + out[3]);
}

// Each sign bit to +scale or -scale (added to dst when accumulating).
__attribute__((target("avx2"))) void unpack_avx2(const char* src, size_t words, float scale,
                                                 char* dst, bool accumulate) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 pos = _mm256_set1_ps(scale), neg = _mm256_set1_ps(-scale);
  for (size_t w = 0; w < words; ++w) {
    uint32_t word;
    std::memcpy(&word, src + w * 4, 4);
    float* out = reinterpret_cast<float*>(dst + w * 128);
    for (int q = 0; q < 4; ++q) {
      __m256i bits = _mm256_set1_epi32(static_cast<int>((word >> (8 * q)) & 0xFF));
      __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(bits, bit), bit);
      __m256 v = _mm256_blendv_ps(pos, neg, _mm256_castsi256_ps(set));
      if (accumulate) v = _mm256_add_ps(_mm256_loadu_ps(out + 8 * q), v);
      _mm256_storeu_ps(out + 8 * q, v);
    }
  }
}

const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

class OneBit {
 public:
  OneBit(const TensorParams& params, caravan_dtype dtype, size_t count)
      : dtype_(dtype),
        count_(count),
        words_((count + 31) / 32),
        scaling_(params.flag("byteps_compressor_onebit_scaling", false)) {
    by_float(dtype, kName, [](auto) { return 0; });
  }
  size_t max_bytes() const { return words_ * 4 + caravan_dtype_size(dtype_); }
  size_t compress(const void* src, void* dst, uint64_t, bool) {
    return by_float(dtype_, kName, [&](auto t) { return compress_as<decltype(t)>(src, dst); });
  }
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t, bool) {
    expect_length(kName, len, max_bytes(), std::to_string(count_) + " elements");
    by_float(dtype_, kName, [&](auto t) {
      decompress_as<decltype(t)>(src, dst, accumulate);
      return 0;
    });
  }

 private:
  template <class T>
  size_t compress_as(const void* src, void* dst) const {
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr unsigned kSignShift = sizeof(T) * 8 - 1;
    // |x| is summed in eight lanes over each word's 32 elements, so the
    // compiler can keep them in one vector register (a single running sum
    // would fix the order of additions), and each word's lanes go into a
    // double: float lanes over a whole partition would lose digits.
    double l1 = 0;
    size_t w = 0;
#ifdef CARAVAN_ONEBIT_AVX2
    if constexpr (sizeof(T) == 4) {
      if (kHaveAvx2) {
        w = count_ / 32;
        l1 = pack_avx2(static_cast<const char*>(src), w, static_cast<char*>(dst));
      }
    }
#endif
    for (; w < words_; ++w) {
      size_t base = w * 32, end = base + 32 < count_ ? base + 32 : count_;
      uint32_t word = 0;
      T lanes[8] = {};
      for (size_t i = base; i < end; ++i) {
        Bits b = load<Bits>(src, i);
        word |= static_cast<uint32_t>(b >> kSignShift) << (i - base);
        T v = load<T>(src, i);
        lanes[i & 7] += v < 0 ? -v : v;
      }
      store<uint32_t>(dst, w, word);
      for (T s : lanes) l1 += s;
    }
    T scale = scaling_ ? static_cast<T>(l1 / static_cast<double>(count_)) : T(1);
    store<T>(static_cast<char*>(dst) + words_ * 4, 0, scale);
    return max_bytes();
  }

  template <class T>
  void decompress_as(const void* src, void* dst, bool accumulate) const {
    T scale = load<T>(static_cast<const char*>(src) + words_ * 4, 0);
    size_t w = 0;
#ifdef CARAVAN_ONEBIT_AVX2
    if constexpr (sizeof(T) == 4) {
      if (kHaveAvx2) {
        w = count_ / 32;
        unpack_avx2(static_cast<const char*>(src), w, scale, static_cast<char*>(dst), accumulate);
      }
    }
#endif
    for (; w < words_; ++w) {
      uint32_t word = load<uint32_t>(src, w);
      size_t base = w * 32, end = base + 32 < count_ ? base + 32 : count_;
      for (size_t i = base; i < end; ++i) {
        T v = (word >> (i - base)) & 1u ? -scale : scale;
        store<T>(dst, i, accumulate ? load<T>(dst, i) + v : v);
      }
    }
  }

  caravan_dtype dtype_;
  size_t count_;
  size_t words_;
  bool scaling_;
};

}  // namespace
}  // namespace caravan::compressors

CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<caravan::compressors::OneBit>(
    "onebit", CARAVAN_VERSION_STRING,
    "one sign bit per element and one scale (byteps_compressor_onebit_scaling)"))
