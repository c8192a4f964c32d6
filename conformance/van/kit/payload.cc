#include "payload.h"

#include <gtest/gtest.h>

#include <cstring>

namespace caravan::van_check {

std::vector<uint8_t> pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131u + (i >> 9) + seed * 7u);
  return v;
}

uint64_t read_u64(const RecvSegment& s) {
  uint64_t v = 0;
  EXPECT_EQ(s.len, sizeof v);
  if (s.len == sizeof v) std::memcpy(&v, s.data, sizeof v);
  return v;
}

void expect_same(const RecvSegment& got, const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.len, want.size());
  if (!want.empty()) {
    ASSERT_NE(got.data, nullptr);
    EXPECT_EQ(std::memcmp(got.data, want.data(), want.size()), 0) << "content differs";
  }
}

}  // namespace caravan::van_check
