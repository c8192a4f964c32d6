// A key's round on a server (engine/server/round.h): one push per worker,
// and the roll-over to the next round.
#include "engine/server/round.h"

#include <gtest/gtest.h>

namespace caravan {
namespace {

Waiter from(int32_t sender) {
  Waiter w;
  w.head.sender = sender;
  return w;
}

TEST(Round, OnePushPerWorkerUntilItRollsOver) {
  Round r(2);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.twice(0, 5, "pushed"), "");
  r.join(0, from(9));
  EXPECT_EQ(r.twice(0, 5, "pushed"), "worker 0 pushed key 5 twice in one round");
  EXPECT_FALSE(r.complete());
  r.join(1, from(11));
  EXPECT_TRUE(r.complete());
  int values = 3;
  r.values = Blob{&values, sizeof values, nullptr};
  r.root = 1;
  Round done = r.roll_over();
  EXPECT_EQ(done.waiting().size(), 2u);
  EXPECT_EQ(done.values.data, &values);
  EXPECT_EQ(done.number(), 0u);
  EXPECT_EQ(r.number(), 1u);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.values.data, nullptr);
  EXPECT_EQ(r.root, -1);
  EXPECT_EQ(r.twice(0, 5, "pushed"), "") << "the next round takes worker 0 again";
}

TEST(Round, ClearHandsTheWaitersBackAndStartsAfresh) {
  Round r(3);
  r.join(2, from(13));
  std::vector<Waiter> told = r.clear();
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].head.sender, 13);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.twice(2, 1, "broadcast"), "");
  EXPECT_EQ(r.number(), 0u) << "a cleared round finished nothing";
}

}  // namespace
}  // namespace caravan
