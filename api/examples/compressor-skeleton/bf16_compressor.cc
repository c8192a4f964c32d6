// bf16: a compressor in a few lines, against the SDK alone. Each float32
// travels as the bfloat16 nearest to it (half the bytes; 8 bits of
// mantissa), and comes back widened. Deterministic, so it ignores the seed
// and the direction, and takes no parameters.
#include <cstdint>
#include <cstring>
#include <string>

#include "caravan/float16.h"
#include "caravan/plugin/compressor_cxx.hpp"

namespace {

using caravan::plugin::Error;

class Bf16 {
 public:
  Bf16(const caravan::plugin::TensorParams&, caravan_dtype dtype, size_t count) : count_(count) {
    if (dtype != CARAVAN_FLOAT32)
      throw Error(CARAVAN_STATUS_UNSUPPORTED,
                  std::string("bf16 compresses float32 tensors, not ") + caravan_dtype_name(dtype));
  }
  size_t max_bytes() const { return count_ * 2; }
  size_t compress(const void* src, void* dst, uint64_t, bool) {
    for (size_t i = 0; i < count_; ++i) {
      float v;
      std::memcpy(&v, static_cast<const char*>(src) + 4 * i, 4);
      uint16_t h = caravan_f32_to_bf16(v);
      std::memcpy(static_cast<char*>(dst) + 2 * i, &h, 2);
    }
    return max_bytes();
  }
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t, bool) {
    if (len != max_bytes())
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "bf16: " + std::to_string(len) + " bytes for " + std::to_string(count_) +
                      " elements, which take " + std::to_string(max_bytes()));
    for (size_t i = 0; i < count_; ++i) {
      uint16_t h;
      std::memcpy(&h, static_cast<const char*>(src) + 2 * i, 2);
      float v = caravan_bf16_to_f32(h);
      char* at = static_cast<char*>(dst) + 4 * i;
      if (accumulate) {
        float old;
        std::memcpy(&old, at, 4);
        v += old;
      }
      std::memcpy(at, &v, 4);
    }
  }

 private:
  size_t count_;
};

}  // namespace

CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<Bf16>(
    "bf16", "1.0", "float32 as the nearest bfloat16 (an example of the SDK)"))
