// The public element tables (caravan/dtype.h) and 16-bit float conversions
// (caravan/float16.h) that the engine, the plugins and the test programs share.
#include "caravan/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "caravan/float16.h"

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

TEST(Dtype, SizesAndNames) {
  const struct {
    caravan_dtype type;
    size_t size;
    const char* name;
  } expected[] = {{CARAVAN_FLOAT32, 4, "float32"}, {CARAVAN_FLOAT64, 8, "float64"},
                  {CARAVAN_FLOAT16, 2, "float16"}, {CARAVAN_UINT8, 1, "uint8"},
                  {CARAVAN_INT32, 4, "int32"},     {CARAVAN_INT8, 1, "int8"},
                  {CARAVAN_INT64, 8, "int64"},     {CARAVAN_BFLOAT16, 2, "bfloat16"}};
  static_assert(sizeof expected / sizeof expected[0] == CARAVAN_DTYPE_COUNT);
  for (const auto& e : expected) {
    EXPECT_EQ(caravan_dtype_size(e.type), e.size) << e.name;
    EXPECT_STREQ(caravan_dtype_name(e.type), e.name);
  }
}

TEST(Dtype, NumbersThatAreNoDtype) {
  for (int n : {-1, CARAVAN_DTYPE_COUNT, 255, std::numeric_limits<int>::min()}) {
    EXPECT_EQ(caravan_dtype_size(n), 0u) << n;
    EXPECT_STREQ(caravan_dtype_name(n), "invalid") << n;
  }
}

TEST(Float16, RoundTripsEveryHalfThatIsNoNaN) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
    EXPECT_EQ(caravan_f32_to_f16(caravan_f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Float16, KnownValues) {
  EXPECT_EQ(caravan_f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(caravan_f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(caravan_f32_to_f16(65504.0f), 0x7bff);          // the largest half
  EXPECT_EQ(caravan_f32_to_f16(65519.0f), 0x7bff);          // below the midpoint
  EXPECT_EQ(caravan_f32_to_f16(65520.0f), 0x7c00);          // the midpoint: ties to the even inf
  EXPECT_EQ(caravan_f32_to_f16(std::ldexp(1.0f, -24)), 1);  // the smallest subnormal
  EXPECT_EQ(caravan_f32_to_f16(std::ldexp(1.0f, -25)), 0);  // half of it: ties to even zero
  EXPECT_EQ(caravan_f32_to_f16(std::ldexp(3.0f, -26)), 1);  // above half: rounds up
  EXPECT_EQ(caravan_f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(caravan_f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even, upwards
  EXPECT_EQ(caravan_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(caravan_f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));  // the largest subnormal
  EXPECT_EQ(bits(caravan_f16_to_f32(0x8000)), 0x80000000u);         // -0 keeps its sign
}

TEST(Float16, NaNsStayNaNsAndComeOutQuiet) {
  EXPECT_EQ(bits(caravan_f16_to_f32(0x7c01)), 0x7fc02000u);  // quieted, payload kept
  EXPECT_EQ(caravan_f32_to_f16(std::numeric_limits<float>::quiet_NaN()), 0x7e00);
  uint32_t signalling = 0x7f800001u;
  float f;
  std::memcpy(&f, &signalling, sizeof f);
  EXPECT_EQ(caravan_f32_to_f16(f), 0x7e00);
  EXPECT_EQ(caravan_f32_to_bf16(f), 0x7fc0);
}

TEST(Bfloat16, TopHalfOfAFloatRoundedToNearestEven) {
  EXPECT_EQ(caravan_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bits(caravan_bf16_to_f32(0x3f80)), bits(1.0f));
  EXPECT_EQ(caravan_f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_EQ(caravan_f32_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // tie to even, upwards
  EXPECT_EQ(caravan_f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
    EXPECT_EQ(caravan_f32_to_bf16(caravan_bf16_to_f32(static_cast<uint16_t>(h))), h)
        << std::hex << h;
  }
}

}  // namespace
