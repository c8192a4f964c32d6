// A compressor plugin driven through its C table as the engine drives it:
// the file opened and its descriptor checked (conformance/host), one
// instance (init .. finalize) on a fake host, and one state (create ..
// destroy) for a partition. Tensors travel as raw bytes of their dtype, so
// one test body serves float32 and float64. Shared by the conformance suite
// and the built-in compressors' own test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "caravan/plugin/compressor_v1.h"
#include "conformance/host/fake_host.h"

namespace caravan::conformance {

using Bytes = std::vector<uint8_t>;

struct CompressorFile {
  std::string path;
  caravan_plugin_entry_fn entry = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
  const caravan_compressor_ops_v1* ops = nullptr;
  std::string error;  // why it did not load; empty when it did
};

// Opens the file the way the engine does. It is never closed, as the
// engine keeps its plugins: opening it again finds the same library.
CompressorFile open_compressor(const std::string& path);

// One instance with one state for `count` elements of `dtype`, made from
// the tensor's parameters `params`. A failed load, init or create is kept,
// not reported: refusals are what some tests want.
class Compressor {
 public:
  Compressor(const std::string& path, const Params& params, caravan_dtype dtype, size_t count);
  ~Compressor();  // destroy and finalize, each expected to return OK
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // "" when the file loaded and init and create returned OK; else which
  // step failed, its status and the plugin's set_error text.
  const std::string& failure() const { return failure_; }
  // What create returned (INTERNAL when load or init failed before it).
  caravan_status create_status() const { return create_status_; }
  // The last set_error text, and forgetting it, so that a test can tell
  // that the next refusal explained itself.
  std::string error() const { return host_.error(); }
  void clear_error() { host_.clear_error(); }

  const caravan_compressor_ops_v1& ops() const { return *file_.ops; }
  void* ctx() const { return ctx_; }
  void* state() const { return state_; }
  size_t max_bytes() const { return max_bytes_; }
  size_t count() const { return count_; }
  caravan_dtype dtype() const { return dtype_; }
  size_t tensor_bytes() const { return count_ * caravan_dtype_size(dtype_); }

  // compress() of `src` (tensor_bytes() long); the payload is cut to the
  // length the plugin reported. A failure is a test failure, and gives {}.
  Bytes compress(const Bytes& src, uint64_t seed, int direction);
  // decompress() of `payload` into `dst` (tensor_bytes() long).
  caravan_status decompress(const Bytes& payload, Bytes& dst, bool accumulate, uint64_t seed,
                            int direction);
  // decompress() into a new tensor; a failure is a test failure.
  Bytes decode(const Bytes& payload, uint64_t seed, int direction);

 private:
  const CompressorFile file_;
  FakeHost host_;
  caravan_dtype dtype_;
  size_t count_;
  void* ctx_ = nullptr;
  void* state_ = nullptr;
  size_t max_bytes_ = 0;
  caravan_status create_status_ = CARAVAN_STATUS_INTERNAL;
  std::string failure_;
};

// ---- Tensors as bytes ---------------------------------------------------------------

template <class T>
constexpr caravan_dtype dtype_of() {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float or double");
  return sizeof(T) == 4 ? CARAVAN_FLOAT32 : CARAVAN_FLOAT64;
}

template <class T>
Bytes to_bytes(const std::vector<T>& values) {
  Bytes out(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

template <class T>
std::vector<T> from_bytes(const Bytes& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// A float32 or float64 tensor's elements, widened.
std::vector<double> to_doubles(caravan_dtype dtype, const Bytes& bytes);
// `values` rounded to a float32 or float64 tensor.
Bytes from_doubles(caravan_dtype dtype, const std::vector<double>& values);

// The test's own generator (splitmix64), so that no test draws from the
// generator of the plugin it checks.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  uint64_t s_;
};

// `n` values of both signs whose magnitudes span 2^-8 to 2^8, with some
// +0.0 and -0.0 among them: the sign and magnitude cases a compressor
// meets in a gradient.
std::vector<double> random_values(size_t n, uint64_t seed);

}  // namespace caravan::conformance
