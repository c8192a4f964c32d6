// What the built-in compressors share: dtype dispatch, unaligned loads and
// stores, a seeded random generator, bit packing and byteps_compressor_k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "caravan/plugin/compressor_cxx.hpp"

namespace caravan::compressors {

using plugin::Error;
using plugin::TensorParams;

// Runs f(T{}) with T the C++ type of a float32 or float64 dtype; other
// dtypes are UNSUPPORTED, naming the compressor.
template <class F>
decltype(auto) by_float(caravan_dtype dtype, const char* compressor, F&& f) {
  if (dtype == CARAVAN_FLOAT32) return f(float{});
  if (dtype == CARAVAN_FLOAT64) return f(double{});
  throw Error(CARAVAN_STATUS_UNSUPPORTED, std::string(compressor) +
                                              " compresses float32 and float64 tensors, not " +
                                              caravan_dtype_name(dtype));
}

// Arrays need no alignment (compressor_v1.h): every access is a memcpy,
// which the compiler turns into a plain load or store.
template <class T>
inline T load(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
inline void store(void* base, size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

// xoshiro256** seeded through splitmix64: fast, and the same sequence on
// every host for a seed.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias is below
  // 2^-32 for the counts a partition has).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// byteps_compressor_k as BytePS reads it: below 1 a fraction of the
// partition's elements (at least one), else a count (at most all of them).
inline size_t k_of(const TensorParams& params, size_t count, const char* compressor) {
  double k = params.required_number(
      "byteps_compressor_k",
      std::string(compressor) + " needs it (a count, or a fraction below 1)");
  if (!(k > 0))
    TensorParams::bad("byteps_compressor_k", *params.text("byteps_compressor_k"),
                      "above 0 (a count, or a fraction below 1)");
  // Clamped while still a double: converting one beyond size_t's range
  // (k=1e30) is undefined, and came out as k = 1 on x86-64.
  double n = k < 1 ? k * static_cast<double>(count) : k;
  if (n >= static_cast<double>(count)) return count;
  return n < 1 ? 1 : static_cast<size_t>(n);
}

// Indices travel as 32-bit numbers: a partition has fewer elements.
inline void check_count_fits_indices(size_t count, const char* compressor) {
  if (count > UINT32_MAX)
    throw Error(CARAVAN_STATUS_UNSUPPORTED,
                std::string(compressor) + " takes partitions of at most 2^32-1 elements, not " +
                    std::to_string(count));
}

[[noreturn]] inline void not_my_bytes(const char* compressor, const std::string& why) {
  throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
              std::string(compressor) + ": the bytes to decompress are not its output: " + why);
}

// Every compressor's output has one length for a partition: refuses any
// other, `what` saying what fixes it ("100 elements", "k = 5").
inline void expect_length(const char* compressor, size_t len, size_t expected,
                          const std::string& what) {
  if (len != expected)
    not_my_bytes(compressor, std::to_string(len) + " bytes where " + std::to_string(expected) +
                                 " are expected (" + what + ")");
}

// Fixed-width fields of `bits` (1..32) bits, packed little-end first into
// 64-bit words.
class BitWriter {
 public:
  explicit BitWriter(void* dst) : dst_(static_cast<char*>(dst)) {}
  void put(uint32_t value, unsigned bits) {
    acc_ |= static_cast<uint64_t>(value) << used_;
    used_ += bits;
    if (used_ >= 64) {
      store<uint64_t>(dst_, words_++, acc_);
      used_ -= 64;
      acc_ = used_ ? static_cast<uint64_t>(value) >> (bits - used_) : 0;
    }
  }
  // Bytes written once the last word is flushed.
  size_t finish() {
    if (used_) store<uint64_t>(dst_, words_++, acc_);
    return words_ * sizeof(uint64_t);
  }

 private:
  char* dst_;
  size_t words_ = 0;
  uint64_t acc_ = 0;
  unsigned used_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const void* src) : src_(static_cast<const char*>(src)) {}
  uint32_t get(unsigned bits) {
    if (have_ >= bits) {
      uint32_t out = static_cast<uint32_t>(acc_ & mask(bits));
      acc_ >>= bits;
      have_ -= bits;
      return out;
    }
    // The field starts in the bits carried and ends in the next word.
    uint64_t w = load<uint64_t>(src_, words_++);
    unsigned need = bits - have_;
    uint32_t out = static_cast<uint32_t>(acc_ | ((w & mask(need)) << have_));
    acc_ = w >> need;
    have_ = 64 - need;
    return out;
  }
  static size_t words_for(size_t fields, unsigned bits) { return (fields * bits + 63) / 64; }

 private:
  static uint64_t mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
  const char* src_;
  size_t words_ = 0;
  uint64_t acc_ = 0;
  unsigned have_ = 0;
};

}  // namespace caravan::compressors
