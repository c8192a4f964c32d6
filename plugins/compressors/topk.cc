// top-k: the k elements of largest magnitude (byteps_compressor_k: a
// count, or a fraction of the partition below 1), sent as k 32-bit indices
// then their k values; the others decode as zero. Ties in magnitude go to
// the lower index, so the choice is a function of the values alone. The
// server's sum of the workers' top-k is cut to its own top k for the pull.
#include <algorithm>
#include <numeric>

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
  template <class T>
  size_t compress_as(const void* src, void* dst) {
    if (magnitude_.size() != count_ * sizeof(double)) {
      magnitude_.resize(count_ * sizeof(double));
      order_.resize(count_);
    }
    T* mag = reinterpret_cast<T*>(magnitude_.data());
    for (size_t i = 0; i < count_; ++i) {
      T v = load<T>(src, i);
      mag[i] = v < 0 ? -v : v;
    }
    std::iota(order_.begin(), order_.end(), 0u);
    auto larger = [mag](uint32_t a, uint32_t b) {
      return mag[a] > mag[b] || (mag[a] == mag[b] && a < b);
    };
    if (k_ < count_) std::nth_element(order_.begin(), order_.begin() + k_, order_.end(), larger);
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
  std::vector<char> magnitude_;  // scratch: |x| as T
  std::vector<uint32_t> order_;  // scratch: indices by magnitude
};

}  // namespace
}  // namespace caravan::compressors

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry() {
  return caravan::plugin::compressor_descriptor<caravan::compressors::TopK>(
      "topk", CARAVAN_VERSION_STRING,
      "the k largest magnitudes with their indices (byteps_compressor_k)");
}
