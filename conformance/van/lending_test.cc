// Receiving into lent memory (van_v2.h, minor 1: lend and unlend), for vans
// that have it; the others skip, saying so.
#include <algorithm>
#include <cstring>

#include "van_pair.h"

namespace caravan::van_check {
namespace {

class Lending : public VanPair {
 protected:
  void SetUp() override {
    VanPair::SetUp();
    if (!b_.lends())
      GTEST_SKIP() << "this van has no lend and unlend (van_v2.h minor 1): it keeps "
                      "every message in its own memory";
  }
  // A message as the engine sends one: a small head, then the values. They
  // stay the van's until the send is done (van_v2.h), which may be after
  // the receiver has the message: each test waits for its sends before its
  // values go (a van sending in place reads them to the end of its call).
  caravan_status send(uint64_t slot, const std::vector<uint8_t>& values, Ticket* t = nullptr) {
    return a_.send_slot(kB, slot, {seg(head_), seg(values)}, t);
  }
  bool all_bytes(const std::vector<uint8_t>& v, uint8_t b) {
    for (uint8_t x : v)
      if (x != b) return false;
    return true;
  }
  std::vector<uint8_t> head_ = pattern(32, 99);
};

TEST_F(Lending, TheMatchingMessageLandsInTheLentMemory) {
  auto values = pattern(1 << 20, 1), again = pattern(1 << 20, 2);
  std::vector<uint8_t> buf(values.size(), 0xee);
  ASSERT_EQ(b_.lend(7, 1, buf.data(), buf.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(send(7, values), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    ASSERT_EQ(m.num_segments, 2u);
    expect_same(m.segments[0], head_);
    EXPECT_EQ(m.segments[1].data, buf.data()) << "the values should be in the lent buffer";
    expect_same(m.segments[1], values);
  }));
  // The lend was used up: the next message on the slot is the van's own.
  ASSERT_EQ(send(7, again), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    EXPECT_NE(m.segments[1].data, buf.data());
    expect_same(m.segments[1], again);
  }));
  EXPECT_EQ(buf, values) << "a used-up lend was written again";
  EXPECT_TRUE(a_.wait_all_sent()) << "a send never ended";
}

TEST_F(Lending, OnlyTheExactLengthOnTheSameSlotTakesIt) {
  auto shorter = pattern(4999, 3), other_slot = pattern(5000, 4), no_slot = pattern(5000, 5),
       exact = pattern(5000, 6);
  std::vector<uint8_t> buf(5000, 0xee);
  ASSERT_EQ(b_.lend(9, 1, buf.data(), buf.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(send(9, shorter), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(send(10, other_slot), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(send(0, no_slot), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(send(9, exact), CARAVAN_STATUS_OK) << a_.error();
  for (const auto* want : {&shorter, &other_slot, &no_slot})
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      EXPECT_NE(m.segments[1].data, buf.data()) << want->size() << " bytes took a lend not theirs";
      expect_same(m.segments[1], *want);
    }));
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    EXPECT_EQ(m.segments[1].data, buf.data()) << "a message that did not match used up the lend";
    expect_same(m.segments[1], exact);
  }));
  EXPECT_TRUE(a_.wait_all_sent()) << "a send never ended";
}

TEST_F(Lending, AnUnlentBufferIsNeverWrittenAgain) {
  // A large message, taken back while it is (most likely) still arriving:
  // from unlend's return on the buffer is the test's, and the message must
  // still arrive whole, in the van's memory, unless poll() had already
  // handed it out (then it may stay in the buffer; the test cannot tell
  // the two apart by timing, so it accepts both and says which it saw).
  const size_t n =
      props_.max_message_bytes < (size_t{64} << 20) ? size_t{1} << 20 : size_t{64} << 20;
  auto values = pattern(n, 7);
  std::vector<uint8_t> buf(n, 0xee);
  ASSERT_EQ(b_.lend(11, 1, buf.data(), buf.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(send(11, values), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_EQ(b_.unlend(11), CARAVAN_STATUS_OK) << b_.error();
  std::memset(buf.data(), 0x55, buf.size());
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    if (m.segments[1].data == buf.data()) {
      std::printf("the message was handed out before unlend: it stayed in the buffer\n");
      return;
    }
    expect_same(m.segments[1], values);
    EXPECT_TRUE(all_bytes(buf, 0x55)) << "the van wrote to the buffer after unlend returned";
  }));
  // Taking back a slot with no lend is fine.
  EXPECT_EQ(b_.unlend(11), CARAVAN_STATUS_OK) << b_.error();
  EXPECT_EQ(b_.unlend(12345), CARAVAN_STATUS_OK) << b_.error();
  EXPECT_TRUE(a_.wait_all_sent()) << "a send never ended";
}

TEST_F(Lending, ASecondLendReplacesTheFirst) {
  auto values = pattern(70000, 8);
  std::vector<uint8_t> first(values.size(), 0xee), second(values.size(), 0xee);
  ASSERT_EQ(b_.lend(13, 1, first.data(), first.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(b_.lend(13, 1, second.data(), second.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(send(13, values), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    EXPECT_EQ(m.segments[1].data, second.data());
    expect_same(m.segments[1], values);
  }));
  EXPECT_TRUE(all_bytes(first, 0xee)) << "a replaced lend was written";
  EXPECT_TRUE(a_.wait_all_sent()) << "a send never ended";
}

TEST_F(Lending, AMessageCutShortLeavesTheLendForTheNext) {
  // The sender goes away in the middle of a large message on a lent slot
  // (most likely: its finalize drops what it had not written yet); once
  // the receiver has seen that connection end, a message from another
  // instance on the same slot must take the lend. The receiver may see
  // the end only after the other instance's first messages, so it keeps
  // sending until one lands in the lent memory (or 200 have not). Should
  // the first message have arrived whole after all, it took the lend.
  const size_t n = std::min(props_.max_message_bytes, size_t{16} << 20);
  auto values = pattern(n, 21), next = pattern(n, 22);
  std::vector<uint8_t> buf(n, 0xee);
  ASSERT_EQ(b_.lend(17, 1, buf.data(), buf.size()), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_EQ(send(17, values), CARAVAN_STATUS_OK) << a_.error();
  a_.finalize();
  VanInstance c{van()};
  ASSERT_TRUE(c.started());
  ASSERT_EQ(c.listen(), CARAVAN_STATUS_OK) << c.error();
  ASSERT_EQ(c.connect(kB, b_.addr()), CARAVAN_STATUS_OK) << c.error();
  bool whole_first = false;
  int outstanding = 0;  // c's messages sent and not yet received
  for (int tries = 0; tries < 200; ++tries) {
    if (outstanding == 0) {
      ASSERT_EQ(c.send_slot(kB, 17, {seg(head_), seg(next)}), CARAVAN_STATUS_OK) << c.error();
      ++outstanding;
    }
    Message m;
    ASSERT_EQ(b_.wait_recv(&m), CARAVAN_STATUS_OK) << b_.error();
    ASSERT_EQ(m.num_segments, 2u);
    bool in_buf = m.segments[1].data == buf.data();
    if (m.segments[1].len == n && std::memcmp(m.segments[1].data, values.data(), n) == 0) {
      std::printf("the first message arrived whole: it took the lend\n");
      EXPECT_TRUE(in_buf);
      whole_first = true;
      ASSERT_EQ(b_.release(m), CARAVAN_STATUS_OK);
      continue;
    }
    --outstanding;
    expect_same(m.segments[1], next);
    ASSERT_EQ(b_.release(m), CARAVAN_STATUS_OK);
    if (in_buf) {
      EXPECT_FALSE(whole_first) << "a lend was taken twice";
      return;
    }
    if (whole_first) return;  // the lend was used up; c's message is rightly the van's own
  }
  ADD_FAILURE() << "a message cut short kept the lend from every later one";
}

TEST_F(Lending, BadArgumentsAreRefused) {
  std::vector<uint8_t> buf(64);
  EXPECT_EQ(b_.lend(0, 1, buf.data(), buf.size()), CARAVAN_STATUS_INVALID_ARGUMENT)
      << "slot 0 is no slot";
  EXPECT_EQ(b_.lend(1, 1, nullptr, 64), CARAVAN_STATUS_INVALID_ARGUMENT) << "no buffer";
  EXPECT_EQ(b_.lend(1, CARAVAN_VAN_MAX_SEGMENTS_V2, buf.data(), buf.size()),
            CARAVAN_STATUS_INVALID_ARGUMENT)
      << "segment out of range";
}

}  // namespace
}  // namespace caravan::van_check
