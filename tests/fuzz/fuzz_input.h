// Cuts a fuzzer's input into the pieces a target needs, the same way under
// libFuzzer and in the replay of the corpora.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace caravan::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : p_(data), left_(size) {}
  // The next byte, or 0 once the input is used up.
  uint8_t byte() {
    if (left_ == 0) return 0;
    --left_;
    return *p_++;
  }
  // Little-endian, missing bytes read as 0.
  uint32_t u16() { return byte() | (static_cast<uint32_t>(byte()) << 8); }
  // Up to `n` bytes (fewer at the end); returns where they start.
  const uint8_t* take(size_t n, size_t* got) {
    *got = n < left_ ? n : left_;
    const uint8_t* at = p_;
    p_ += *got;
    left_ -= *got;
    return at;
  }
  const uint8_t* rest(size_t* got) { return take(left_, got); }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

// A property the code under test must keep was broken: abort, so libFuzzer
// saves the input and the replay test fails.
[[noreturn]] inline void broken(const char* what) {
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

}  // namespace caravan::fuzz
