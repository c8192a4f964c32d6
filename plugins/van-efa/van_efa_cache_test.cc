// The remote-buffer cache of the rendezvous protocol, over libfabric's tcp
// provider: a slot's steady-state messages are written straight into the
// buffer the receiver lent, and every byte still arrives as sent.
//
// Each round ends with a small acknowledgement from the receiver, sent
// after it released the round's message: the grant that release sends goes
// first on the same ordered path, so the sender holds it before its next
// round and the counts below are exact.
#include "van_efa_test_support.h"

namespace {

using namespace caravan::van_efa_test;

constexpr uint64_t kSlot = 42;

struct Counts {
  long by_request = -1, by_write = -1, lent = -1, lent_bytes = -1;
};

// The finalize log line: "large messages: R by request to send, W written
// into buffers peers lent; L buffers lent to peers (B bytes)".
Counts CountsOf(Van& v) {
  std::string line = v.host().find_line("large messages:");
  Counts c;
  std::smatch m;
  if (!std::regex_search(line, m,
                         std::regex("(\\d+) by request to send, (\\d+) written.*; (\\d+) buffers "
                                    "lent to peers \\((\\d+) bytes\\)"))) {
    ADD_FAILURE() << "no counts in '" << line << "'";
    return c;
  }
  c.by_request = std::stol(m[1]);
  c.by_write = std::stol(m[2]);
  c.lent = std::stol(m[3]);
  c.lent_bytes = std::stol(m[4]);
  return c;
}

// A message as the engine sends it: a small header, the values, a small
// trailer; the values' pattern changes every round so stale bytes show.
struct SentMessage {
  uint64_t head;
  std::vector<uint8_t> body;
  uint64_t tail;
  SentMessage(size_t bytes, unsigned round)
      : head(round), body(pattern(bytes, round)), tail(~uint64_t{round}) {}
  std::vector<SendSegment> segs() const { return {seg(head), seg(body), seg(tail)}; }
  void expect(const Message& m) const {
    ASSERT_EQ(m.num_segments, 3u);
    EXPECT_EQ(read_u64(m.segments[0]), head);
    expect_same(m.segments[1], body);
    EXPECT_EQ(read_u64(m.segments[2]), tail);
  }
};

caravan_status SendSlot(Van& v, uint64_t peer, uint64_t slot, const SentMessage& msg,
                        Ticket* ticket = nullptr) {
  return v.send_slot(peer, slot, msg.segs(), ticket);
}

// a sends `sizes[i]` bytes for kSlot to b, b checks, releases and acks.
void Rounds(Pair& p, const std::vector<size_t>& sizes) {
  std::vector<SentMessage> msgs;
  for (size_t i = 0; i < sizes.size(); ++i)
    msgs.emplace_back(sizes[i], static_cast<unsigned>(i + 1));
  std::vector<Ticket> sent(sizes.size());
  uint64_t ack = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(SendSlot(p.a, 1, kSlot, msgs[i], &sent[i]), CARAVAN_STATUS_OK) << p.a.error();
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) { msgs[i].expect(m); })) << "round " << i;
    ack = i;
    ASSERT_EQ(p.b.send(2, {seg(ack)}), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.a.recv_one([&](const Message& m) { EXPECT_EQ(read_u64(m.segments[0]), i); }));
  }
  ASSERT_TRUE(p.a.wait_all_sent());
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_EQ(p.a.sent_status(sent[i]), CARAVAN_STATUS_OK) << i;
}

// Van ABI 2's send carries the slot the cache is keyed by.
TEST(VanEfaCache, SpeaksAnAbiWhoseSendTakesASlot) { EXPECT_EQ(Efa().major, 2u); }

TEST(VanEfaCache, SteadyStateRoundsAreWrittenIntoTheLentBuffer) {
  Pair p;
  Rounds(p, std::vector<size_t>(20, size_t{1} << 20));
  p.a.finalize();
  p.b.finalize();
  Counts a = CountsOf(p.a), b = CountsOf(p.b);
  EXPECT_EQ(a.by_request, 1) << "only the first round asks";
  EXPECT_EQ(a.by_write, 19);
  EXPECT_EQ(b.lent, 1) << "one buffer, lent again after every release";
  EXPECT_EQ(a.lent, 0);
}

TEST(VanEfaCache, AGrantTooSmallIsHandedBackAndReplaced) {
  Pair p;
  Rounds(p, {256 << 10, 4 << 20, 4 << 20, 200 << 10});
  p.a.finalize();
  p.b.finalize();
  Counts a = CountsOf(p.a), b = CountsOf(p.b);
  EXPECT_EQ(a.by_request, 2) << "the first round, and the one too large for the 256 KiB grant";
  EXPECT_EQ(a.by_write, 2) << "the second 4 MiB round, and a smaller one into the 4 MiB buffer";
  EXPECT_EQ(b.lent, 2);
  // Only the 4 MiB buffer (class 5 MiB) is still lent: the small one came back.
  EXPECT_EQ(b.lent_bytes, 5 << 20);
}

TEST(VanEfaCache, AMessageHeldByTheReceiverKeepsItsBufferFromTheNext) {
  Pair p;
  Rounds(p, {1 << 20, 1 << 20});  // the second is written into the lent buffer
  // b holds the third and fourth without releasing them: the third was
  // written into the lent buffer, so the fourth must go by request.
  SentMessage third(1 << 20, 30), fourth(1 << 20, 40);
  ASSERT_EQ(SendSlot(p.a, 1, kSlot, third), CARAVAN_STATUS_OK);
  std::vector<Message> held(2);
  for (auto& m : held) {
    ASSERT_EQ(p.b.wait_recv(&m), CARAVAN_STATUS_OK);
    if (&m == &held[0]) {
      ASSERT_EQ(SendSlot(p.a, 1, kSlot, fourth), CARAVAN_STATUS_OK);
    }
  }
  third.expect(held[0]);
  fourth.expect(held[1]);
  ASSERT_TRUE(p.a.wait_all_sent());
  for (auto& m : held) ASSERT_EQ(p.b.release(m), CARAVAN_STATUS_OK);
  uint64_t ack = 0;
  ASSERT_EQ(p.b.send(2, {seg(ack)}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(p.a.recv_one([](const Message&) {}));
  Rounds(p, {1 << 20});
  p.a.finalize();
  p.b.finalize();
  Counts a = CountsOf(p.a), b = CountsOf(p.b);
  EXPECT_EQ(a.by_request, 2) << "the first round and the fourth message";
  EXPECT_EQ(a.by_write, 3);
  EXPECT_EQ(b.lent, 1);
}

TEST(VanEfaCache, LentBuffersStayWithinCacheBytes) {
  Pair p(Params{{"CACHE_BYTES", std::to_string(3 << 20)}});
  std::vector<SentMessage> msgs;
  for (unsigned key = 0; key < 8; ++key) msgs.emplace_back((1 << 20) - 4096, key + 1);
  for (size_t round = 0; round < 3; ++round) {
    for (unsigned key = 0; key < 8; ++key) {
      ASSERT_EQ(SendSlot(p.a, 1, key + 1, msgs[key]), CARAVAN_STATUS_OK);
      ASSERT_TRUE(p.b.recv_one([&](const Message& m) { msgs[key].expect(m); }));
    }
    uint64_t ack = round;
    ASSERT_EQ(p.b.send(2, {seg(ack)}), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.a.recv_one([](const Message&) {}));
  }
  ASSERT_TRUE(p.a.wait_all_sent());
  p.a.finalize();
  p.b.finalize();
  Counts a = CountsOf(p.a), b = CountsOf(p.b);
  EXPECT_EQ(b.lent, 3) << "three 1 MiB buffers fit 3 MiB";
  EXPECT_LE(b.lent_bytes, 3 << 20);
  EXPECT_EQ(a.by_write, 6) << "three keys, rounds two and three";
  EXPECT_EQ(a.by_request, 18);
}

TEST(VanEfaCache, OffSendsEveryLargeMessageByRequest) {
  Pair p(Params{{"CACHE_BYTES", "0"}});
  Rounds(p, std::vector<size_t>(5, size_t{1} << 20));
  p.a.finalize();
  p.b.finalize();
  Counts a = CountsOf(p.a), b = CountsOf(p.b);
  EXPECT_EQ(a.by_request, 5);
  EXPECT_EQ(a.by_write, 0);
  EXPECT_EQ(b.lent, 0);
}

TEST(VanEfaCache, CacheBytesAboveAQuarterOfTheLimitIsRefused) {
  VanInstance v(Efa(), {{"CACHE_BYTES", std::to_string(size_t{200} << 20)}}, kTcpProvider);
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("CACHE_BYTES"), std::string::npos) << v.error();
}

}  // namespace
