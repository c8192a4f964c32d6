// Bounds-checked little-endian serialisation for control-message bodies.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace caravan::wire {

class Writer {
 public:
  void u8(uint8_t v) { buf_.push_back(v); }
  void i32(int32_t v) { raw(static_cast<uint32_t>(v), 4); }
  void u64(uint64_t v) { raw(v, 8); }
  void str(const std::string& s) {
    u64(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  void raw(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) buf_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> buf_;
};

// Throws std::runtime_error on a read past the end, which the receiver turns
// into "malformed message from <peer>".
class Reader {
 public:
  Reader(const void* data, size_t len) : p_(static_cast<const uint8_t*>(data)), left_(len) {}
  uint8_t u8() { return static_cast<uint8_t>(raw(1)); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(raw(4))); }
  uint64_t u64() { return raw(8); }
  std::string str(size_t max_len = 4096) {
    // The length is only peeked until the string is known to fit, so a
    // refused string consumes nothing, like every other failed read.
    if (left_ < 8) throw std::runtime_error("truncated body");
    uint64_t n = peek(8);
    if (n > max_len || n > left_ - 8) throw std::runtime_error("string length out of bounds");
    p_ += 8;
    left_ -= 8;
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return s;
  }
  bool done() const { return left_ == 0; }
  size_t left() const { return left_; }

 private:
  uint64_t peek(int n) const {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p_[i]) << (8 * i);
    return v;
  }
  uint64_t raw(int n) {
    if (left_ < static_cast<size_t>(n)) throw std::runtime_error("truncated body");
    uint64_t v = peek(n);
    p_ += n;
    left_ -= n;
    return v;
  }
  const uint8_t* p_;
  size_t left_;
};

}  // namespace caravan::wire
