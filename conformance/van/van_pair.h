// The fixture of most of the kit's tests: two instances of the van under
// test in one process, each listening on 127.0.0.1 and connected to the
// other (a as peer kA, b as peer kB).
#pragma once

#include <gtest/gtest.h>

#include "kit/payload.h"
#include "kit/van_instance.h"
#include "van_under_test.h"

namespace caravan::van_check {

class VanPair : public ::testing::Test {
 protected:
  static constexpr uint64_t kA = 1, kB = 2;
  void SetUp() override;
  caravan_van_properties_v2 props_{};
  VanInstance a_{van()}, b_{van()};
};

}  // namespace caravan::van_check
