#include "van_pair.h"

namespace caravan::van_check {

void VanPair::SetUp() {
  ASSERT_TRUE(a_.started());
  ASSERT_TRUE(b_.started());
  props_ = a_.properties();
  ASSERT_EQ(a_.listen(), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(b_.listen(), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(b_.connect(kA, a_.addr()), CARAVAN_STATUS_OK) << b_.error();
}

}  // namespace caravan::van_check
