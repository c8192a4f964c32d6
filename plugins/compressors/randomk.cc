// random-k: k elements chosen uniformly without replacement
// (byteps_compressor_k: a count, or a fraction below 1) from the round's
// seed, so every worker and the server choose the same ones and only the
// k values travel. The pull's decoding scales them by n/k: a round's
// result is an unbiased estimate of the sum, and the server's sum of the
// workers' values lies on the same k indices, so the pull loses nothing
// more. Pushes decode unscaled (the server only adds them).
// With error feedback (byteps_error_feedback_type=vanilla) nothing is
// scaled, as in BytePS: error feedback carries what was not sent into the
// next rounds, which only converges for a compressor that never makes a
// value larger; scaled by n/k, the carried error grows without bound.
#include "compressor_kit.h"

namespace caravan::compressors {
namespace {

constexpr const char* kName = "randomk";

class RandomK {
 public:
  RandomK(const TensorParams& params, caravan_dtype dtype, size_t count)
      : dtype_(dtype),
        count_(count),
        k_(k_of(params, count, kName)),
        unbiased_(params.text("byteps_error_feedback_type").value_or("none") != "vanilla"),
        chosen_(count, false) {
    by_float(dtype, kName, [](auto) { return 0; });
    check_count_fits_indices(count, kName);
  }
  size_t max_bytes() const { return k_ * caravan_dtype_size(dtype_); }
  size_t compress(const void* src, void* dst, uint64_t seed, bool) {
    const std::vector<uint32_t>& idx = indices(seed);
    return by_float(dtype_, kName, [&](auto t) {
      using T = decltype(t);
      for (size_t j = 0; j < k_; ++j) store<T>(dst, j, load<T>(src, idx[j]));
      return max_bytes();
    });
  }
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t seed,
                  bool pull) {
    expect_length(kName, len, max_bytes(), "k = " + std::to_string(k_));
    const std::vector<uint32_t>& idx = indices(seed);
    by_float(dtype_, kName, [&](auto t) {
      using T = decltype(t);
      if (!accumulate) std::memset(dst, 0, count_ * sizeof(T));
      T scale = pull && unbiased_
                    ? static_cast<T>(static_cast<double>(count_) / static_cast<double>(k_))
                    : T(1);
      for (size_t j = 0; j < k_; ++j)
        store<T>(dst, idx[j], load<T>(dst, idx[j]) + scale * load<T>(src, j));
      return 0;
    });
  }

 private:
  // Floyd's sampling: k distinct indices, each set of k equally likely.
  // Kept for the seed last asked, as the same round decodes what it coded.
  const std::vector<uint32_t>& indices(uint64_t seed) {
    if (have_ && seed == seed_) return idx_;
    Rng rng(seed);
    idx_.clear();
    for (size_t j = count_ - k_; j < count_; ++j) {
      size_t t = rng.below(j + 1);
      if (chosen_[t]) t = j;
      chosen_[t] = true;
      idx_.push_back(static_cast<uint32_t>(t));
    }
    for (uint32_t i : idx_) chosen_[i] = false;
    seed_ = seed;
    have_ = true;
    return idx_;
  }

  caravan_dtype dtype_;
  size_t count_;
  size_t k_;
  bool unbiased_;             // scaled by n/k on the pull: without error feedback
  std::vector<bool> chosen_;  // scratch for Floyd's sampling; all false between calls
  std::vector<uint32_t> idx_;
  uint64_t seed_ = 0;
  bool have_ = false;
};

}  // namespace
}  // namespace caravan::compressors

CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<caravan::compressors::RandomK>(
    "randomk", CARAVAN_VERSION_STRING,
    "k values at indices drawn from the round's shared seed, unbiased (byteps_compressor_k)"))
