// top-k: the k elements of largest magnitude (byteps_compressor_k: a
// count, or a fraction of the partition below 1), sent as k 32-bit indices
// then their k values; the others decode as zero. Ties in magnitude go to
// the lower index, so the choice is a function of the values alone. The
// server's sum of the workers' top-k is cut to its own top k for the pull.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "compressor_kit.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define CARAVAN_TOPK_AVX2 1
#endif

namespace caravan::compressors {
namespace {

constexpr const char* kName = "topk";
#ifdef CARAVAN_TOPK_AVX2
const bool kHaveAvx2 = __builtin_cpu_supports("avx2");
#endif

class TopK {
 public:
  TopK(const TensorParams& params, caravan_dtype dtype, size_t count)
      : dtype_(dtype), count_(count), k_(k_of(params, count, kName)) {
    by_float(dtype, kName, [](auto) { return 0; });
    check_count_fits_indices(count, kName);
  }
  size_t max_bytes() const { return k_ * (4 + caravan_dtype_size(dtype_)); }
  size_t compress(const void* src, void* dst, uint64_t, bool) {
    return by_float(dtype_, kName, [&](auto t) { return compress_as<decltype(t)>(src, dst); });
  }
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t, bool) {
    expect_length(kName, len, max_bytes(), "k = " + std::to_string(k_));
    for (size_t j = 0; j < k_; ++j) {
      uint32_t i = load<uint32_t>(src, j);
      if (i >= count_)
        not_my_bytes(kName, "index " + std::to_string(i) + " of a partition of " +
                                std::to_string(count_) + " elements");
    }
    by_float(dtype_, kName, [&](auto t) {
      decompress_as<decltype(t)>(src, dst, accumulate);
      return 0;
    });
  }

 private:
  // A candidate: an element's magnitude and index. NaN counts as the
  // largest magnitude, so a NaN gradient travels as it would uncompressed
  // (and the ordering stays a strict weak one).
  template <class T>
  struct Candidate {
    T mag;
    uint32_t index;
  };
  template <class T>
  static bool before(const Candidate<T>& a, const Candidate<T>& b) {
    return a.mag > b.mag || (a.mag == b.mag && a.index < b.index);
  }
  template <class T>
  static T magnitude(const void* src, size_t i) {
    // fabs, not a comparison: the signs are random, and a branch on each
    // would be mispredicted half the time.
    T m = std::fabs(load<T>(src, i));
    return m == m ? m : std::numeric_limits<T>::infinity();
  }

  // The candidates, in index order: every element whose magnitude is at
  // least a floor read off a sample, chosen low enough that they hold the
  // top k; one pass over the values, and the exact selection only among
  // them (about 1.5 k). A sample that misjudged falls back to every one.
  template <class T>
  void gather_candidates(const void* src, std::vector<Candidate<T>>& out) {
    out.clear();
    const size_t samples = count_ < kSamples ? count_ : kSamples;
    if (k_ < count_ && samples * 4 < count_) {
      std::vector<T> sample(samples);
      const size_t stride = count_ / samples;
      for (size_t j = 0; j < samples; ++j) sample[j] = magnitude<T>(src, j * stride);
      size_t rank = k_ * samples / count_ * 3 / 2 + 32;  // the sample's expected k-th, and room
      if (rank < samples) {
        std::nth_element(sample.begin(), sample.begin() + rank, sample.end(), std::greater<T>());
        const T floor = sample[rank];
        size_t i = 0;
#ifdef CARAVAN_TOPK_AVX2
        if constexpr (sizeof(T) == 4) {
          if (kHaveAvx2) i = gather_avx2(static_cast<const float*>(src), count_, floor, out);
        }
#endif
        for (; i < count_; ++i) {
          T m = magnitude<T>(src, i);
          if (m >= floor) out.push_back({m, static_cast<uint32_t>(i)});
        }
        if (out.size() >= k_) return;
        out.clear();
      }
    }
    for (size_t i = 0; i < count_; ++i)
      out.push_back({magnitude<T>(src, i), static_cast<uint32_t>(i)});
  }

  template <class T>
  size_t compress_as(const void* src, void* dst) {
    auto& candidates = candidates_as<T>();
    gather_candidates<T>(src, candidates);
    // The k-th best candidate, found on a copy; then the candidates, in
    // index order, that are it or better: the top k, already sorted by
    // index, which the receiver's scatter walks forwards.
    const bool all = candidates.size() == k_;
    Candidate<T> kth{};
    if (!all) {
      auto& scratch = scratch_as<T>();
      scratch.assign(candidates.begin(), candidates.end());
      std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k_ - 1),
                       scratch.end(), before<T>);
      kth = scratch[k_ - 1];
    }
    char* values = static_cast<char*>(dst) + k_ * 4;
    size_t j = 0;
    for (const Candidate<T>& c : candidates) {
      if (!all && before<T>(kth, c)) continue;
      store<uint32_t>(dst, j, c.index);
      store<T>(values, j, load<T>(src, c.index));
      ++j;
    }
    return max_bytes();
  }

  template <class T>
  std::vector<Candidate<T>>& candidates_as() {
    if constexpr (sizeof(T) == 4)
      return candidates_f_;
    else
      return candidates_d_;
  }
  template <class T>
  std::vector<Candidate<T>>& scratch_as() {
    if constexpr (sizeof(T) == 4)
      return scratch_f_;
    else
      return scratch_d_;
  }

#ifdef CARAVAN_TOPK_AVX2
  // float32 with AVX2: eight magnitudes compared with the floor at once;
  // only a block with a candidate leaves the vector loop. NaN passes (the
  // comparison is "not less", true for unordered). Returns the elements
  // done: the whole blocks.
  __attribute__((target("avx2"))) static size_t gather_avx2(const float* src, size_t n, float floor,
                                                            std::vector<Candidate<float>>& out) {
    const __m256 magnitude_bits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 at_least = _mm256_set1_ps(floor);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      __m256 m = _mm256_and_ps(_mm256_loadu_ps(src + i), magnitude_bits);
      unsigned mask =
          static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(m, at_least, _CMP_NLT_UQ)));
      while (mask) {
        unsigned b = static_cast<unsigned>(__builtin_ctz(mask));
        mask &= mask - 1;
        out.push_back({magnitude<float>(src, i + b), static_cast<uint32_t>(i + b)});
      }
    }
    return i;
  }
#endif

  template <class T>
  void decompress_as(const void* src, void* dst, bool accumulate) const {
    if (!accumulate) std::memset(dst, 0, count_ * sizeof(T));
    const char* values = static_cast<const char*>(src) + k_ * 4;
    for (size_t j = 0; j < k_; ++j) {
      uint32_t i = load<uint32_t>(src, j);
      store<T>(dst, i, load<T>(dst, i) + load<T>(values, j));
    }
  }

  caravan_dtype dtype_;
  size_t count_;
  size_t k_;
  static constexpr size_t kSamples = 4096;
  // Scratch kept between calls: the candidates, and a copy to select in.
  std::vector<Candidate<float>> candidates_f_, scratch_f_;
  std::vector<Candidate<double>> candidates_d_, scratch_d_;
};

}  // namespace
}  // namespace caravan::compressors

CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<caravan::compressors::TopK>(
    "topk", CARAVAN_VERSION_STRING,
    "the k largest magnitudes with their indices (byteps_compressor_k)"))
