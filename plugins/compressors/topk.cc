// top-k: the k elements of largest magnitude (byteps_compressor_k: a
// count, or a fraction of the partition below 1), sent as k 32-bit indices
// then their k values; the others decode as zero. Ties in magnitude go to
// the lower index, so the choice is a function of the values alone. The
// server's sum of the workers' top-k is cut to its own top k for the pull.
#include <algorithm>
#include <cmath>
#include <functional>

#include "compressor_kit.h"

namespace caravan::compressors {
namespace {

constexpr const char* kName = "topk";

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
    if (len != max_bytes())
      not_my_bytes(kName, std::to_string(len) + " bytes, where k = " + std::to_string(k_) +
                              " takes " + std::to_string(max_bytes()));
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
  // The candidates: every index whose magnitude is at least a threshold
  // read off a sample, chosen low enough that they hold the top k; one
  // pass over the values, and the exact selection only among them (about
  // 1.5 k). A sample that misjudged falls back to every index.
  template <class T>
  void gather_candidates(const void* src) {
    // fabs, not a comparison: the signs are random, and a branch on each
    // would be mispredicted half the time.
    auto mag = [src](size_t i) { return std::fabs(load<T>(src, i)); };
    order_.clear();
    const size_t samples = count_ < kSamples ? count_ : kSamples;
    if (k_ < count_ && samples * 4 < count_) {
      std::vector<T>& sample = sample_as<T>();
      sample.resize(samples);
      const size_t stride = count_ / samples;
      for (size_t j = 0; j < samples; ++j) sample[j] = mag(j * stride);
      size_t rank = k_ * samples / count_ * 3 / 2 + 32;  // the sample's expected k-th, and room
      if (rank < samples) {
        std::nth_element(sample.begin(), sample.begin() + rank, sample.end(), std::greater<T>());
        const T floor = sample[rank];
        for (size_t i = 0; i < count_; ++i)
          if (mag(i) >= floor) order_.push_back(static_cast<uint32_t>(i));
        if (order_.size() >= k_) return;
        order_.clear();
      }
    }
    for (size_t i = 0; i < count_; ++i) order_.push_back(static_cast<uint32_t>(i));
  }

  template <class T>
  size_t compress_as(const void* src, void* dst) {
    gather_candidates<T>(src);
    auto larger = [src](uint32_t a, uint32_t b) {
      T x = std::fabs(load<T>(src, a)), y = std::fabs(load<T>(src, b));
      return x > y || (x == y && a < b);
    };
    if (k_ < order_.size())
      std::nth_element(order_.begin(), order_.begin() + k_, order_.end(), larger);
    // In index order: the receiver's scatter then walks memory forwards.
    std::sort(order_.begin(), order_.begin() + k_);
    char* values = static_cast<char*>(dst) + k_ * 4;
    for (size_t j = 0; j < k_; ++j) {
      store<uint32_t>(dst, j, order_[j]);
      store<T>(values, j, load<T>(src, order_[j]));
    }
    return max_bytes();
  }

  template <class T>
  std::vector<T>& sample_as() {
    if constexpr (sizeof(T) == 4) return sample_f_;
    else return sample_d_;
  }

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
  static constexpr size_t kSamples = 16384;
  std::vector<uint32_t> order_;  // scratch: candidate indices
  std::vector<float> sample_f_;  // scratch: sampled magnitudes
  std::vector<double> sample_d_;
};

}  // namespace
}  // namespace caravan::compressors

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry() {
  return caravan::plugin::compressor_descriptor<caravan::compressors::TopK>(
      "topk", CARAVAN_VERSION_STRING,
      "the k largest magnitudes with their indices (byteps_compressor_k)");
}
