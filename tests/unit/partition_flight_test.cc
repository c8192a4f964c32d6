// A partition's life (engine/worker/partition_flight.h): its two events in
// either order, failures, and answers that come too late.
#include "engine/worker/partition_flight.h"

#include <gtest/gtest.h>

namespace caravan {
namespace {

using Stage = PartitionFlight::Stage;
using Then = PartitionFlight::Then;

KVMessage answer(int32_t status = 0) {
  KVMessage m;
  m.head.status = status;
  m.head.timestamp = 7;
  return m;
}

PartitionFlight on_the_wire() {
  PartitionFlight f;
  f.lending();
  f.on_wire();
  return f;
}

TEST(PartitionFlight, SentThenAnsweredStoresTheAnswerItGets) {
  PartitionFlight f = on_the_wire();
  EXPECT_EQ(f.sent(true), Then::kNothing);
  EXPECT_EQ(f.stage(), Stage::kSent);
  KVMessage a = answer();
  EXPECT_EQ(f.answered(a), Then::kStore);
  EXPECT_EQ(a.head.timestamp, 7) << "the answer to store stays with the caller";
  EXPECT_EQ(f.stage(), Stage::kStoring);
  f.end();
  EXPECT_TRUE(f.done());
}

// The van may still read the memory the answer would go to until SENT.
TEST(PartitionFlight, AnAnswerBeforeSentWaitsForIt) {
  PartitionFlight f = on_the_wire();
  KVMessage a = answer();
  EXPECT_EQ(f.answered(a), Then::kNothing);
  EXPECT_EQ(f.stage(), Stage::kAnsweredEarly);
  EXPECT_TRUE(f.answered());
  EXPECT_EQ(f.sent(true), Then::kStore);
  std::unique_ptr<KVMessage> kept = f.take_answer();
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->head.timestamp, 7);
}

// An error answer waits for SENT as well: the caller may free the tensor
// once the operation ends.
TEST(PartitionFlight, AnErrorBeforeSentWaitsForItToo) {
  PartitionFlight f = on_the_wire();
  KVMessage e = answer(-6);
  EXPECT_EQ(f.answered(e), Then::kNothing);
  EXPECT_EQ(f.sent(true), Then::kStore);
  EXPECT_TRUE(f.take_answer()->is_error());
}

// A failed send can never be answered: the partition ends then, and an
// answer that comes anyway is late.
TEST(PartitionFlight, AFailedSendEndsItAndLaterAnswersAreLate) {
  PartitionFlight f = on_the_wire();
  EXPECT_EQ(f.sent(false), Then::kEnded);
  EXPECT_TRUE(f.done());
  KVMessage a = answer();
  EXPECT_EQ(f.answered(a), Then::kLate);
}

TEST(PartitionFlight, AFailedSendAfterAnEarlyAnswerEndsItWithoutStoring) {
  PartitionFlight f = on_the_wire();
  KVMessage a = answer();
  EXPECT_EQ(f.answered(a), Then::kNothing);
  EXPECT_EQ(f.sent(false), Then::kEnded);
  EXPECT_FALSE(f.take_answer()) << "the early answer is dropped";
}

TEST(PartitionFlight, ASecondAnswerIsLate) {
  PartitionFlight f = on_the_wire();
  f.sent(true);
  KVMessage a = answer(), b = answer();
  EXPECT_EQ(f.answered(a), Then::kStore);
  f.end();
  EXPECT_EQ(f.answered(b), Then::kLate);
}

}  // namespace
}  // namespace caravan
