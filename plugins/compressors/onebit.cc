// onebit (signSGD with an optional scale): one sign bit per element, and
// one number for the whole partition: the mean magnitude with
// byteps_compressor_onebit_scaling=true, else 1. Decoded, each element is
// +scale or -scale by its sign bit (-0.0 counts as negative). 32 times
// fewer bytes than float32; biased, so meant to run with error feedback.
#include <cmath>

#include "compressor_kit.h"

namespace caravan::compressors {
namespace {

constexpr const char* kName = "onebit";

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
    if (len != max_bytes())
      not_my_bytes(kName, std::to_string(len) + " bytes, where " + std::to_string(count_) +
                              " elements take " + std::to_string(max_bytes()));
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
    for (size_t w = 0; w < words_; ++w) {
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
    for (size_t w = 0; w < words_; ++w) {
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

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry() {
  return caravan::plugin::compressor_descriptor<caravan::compressors::OneBit>(
      "onebit", CARAVAN_VERSION_STRING,
      "one sign bit per element and one scale (byteps_compressor_onebit_scaling)");
}
