// Lifecycle and failure: refused calls, disconnect and finalize with
// messages in flight, and a peer that goes away.
#include <cstring>
#include <thread>

#include "van_pair.h"

namespace caravan::van_check {
namespace {

// Every send in `sent` completed exactly once, with OK or CLOSED.
void expect_settled(VanInstance& v, const std::vector<Ticket>& sent, const char* after) {
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(v.completions(sent[i]), 1) << "send " << i << " after " << after;
    caravan_status s = v.sent_status(sent[i]);
    EXPECT_TRUE(s == CARAVAN_STATUS_OK || s == CARAVAN_STATUS_CLOSED)
        << "send " << i << " after " << after << ": " << status_name(s);
  }
}

TEST_F(VanPair, RefusedCallsNeverCallDone) {
  auto data = pattern(10, 5);
  EXPECT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_INVALID_ARGUMENT) << "connecting an id twice";
  EXPECT_EQ(a_.disconnect(42), CARAVAN_STATUS_INVALID_ARGUMENT) << "unknown id";
  EXPECT_EQ(a_.send(42, {seg(data)}), CARAVAN_STATUS_INVALID_ARGUMENT) << "unknown peer";
  EXPECT_EQ(a_.send(kB, {}), CARAVAN_STATUS_INVALID_ARGUMENT) << "no segments";
  std::vector<SendSegment> too_many(props_.max_segments + 1, seg(data));
  EXPECT_EQ(a_.send(kB, too_many), CARAVAN_STATUS_INVALID_ARGUMENT)
      << props_.max_segments + 1 << " segments, max_segments is " << props_.max_segments;
  std::vector<SendSegment> nine(CARAVAN_VAN_MAX_SEGMENTS_V2 + 1, seg(data));
  EXPECT_EQ(a_.send(kB, nine), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_.completed_sends(), 0u) << "a refused send must never complete";
  // Still usable after the refusals.
  ASSERT_EQ(a_.send(kB, {seg(data)}), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const Message& m) { expect_same(m.segments[0], data); }));
  EXPECT_TRUE(a_.wait_all_sent()) << "the send after the refusals never ended";
}

TEST_F(VanPair, DisconnectWithMessagesInFlight) {
  auto mib = pattern(1 << 20, 6);
  constexpr size_t kN = 50;
  std::vector<Ticket> sent(kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(a_.send(kB, {seg(mib)}, &sent[i]), CARAVAN_STATUS_OK);
  ASSERT_EQ(a_.disconnect(kB), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(a_.wait_all_sent()) << a_.completed_sends() << " of " << kN
                                  << " done after disconnect";
  expect_settled(a_, sent, "disconnect");
  EXPECT_EQ(a_.send(kB, {seg(mib)}), CARAVAN_STATUS_INVALID_ARGUMENT)
      << "a disconnected id is unknown";
  ASSERT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_OK) << "the id may be connected again";
  // A pattern of its own, so it can be told from the first batch; its
  // completion is awaited, since the van reads it until then.
  auto fresh = pattern(1 << 20, 16);
  Ticket fresh_sent = 0;
  ASSERT_EQ(a_.send(kB, {seg(fresh)}, &fresh_sent), CARAVAN_STATUS_OK) << a_.error();
  // Whatever of the first batch got through arrives before the new message.
  bool arrived = false;
  while (!arrived)
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      const RecvSegment& s0 = m.segments[0];
      arrived = s0.len == fresh.size() && std::memcmp(s0.data, fresh.data(), s0.len) == 0;
      if (!arrived) expect_same(s0, mib);
    }));
  ASSERT_TRUE(a_.wait_sent(fresh_sent)) << "the message after reconnecting was never settled";
  EXPECT_EQ(a_.sent_status(fresh_sent), CARAVAN_STATUS_OK);
}

TEST_F(VanPair, FinalizeWithMessagesInFlight) {
  auto mib = pattern(1 << 20, 7);
  constexpr size_t kN = 200;
  std::vector<Ticket> sent(kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(a_.send(kB, {seg(mib)}, &sent[i]), CARAVAN_STATUS_OK);
  // b holds one message unreleased across its own finalize.
  Message held;
  ASSERT_EQ(b_.wait_recv(&held), CARAVAN_STATUS_OK) << b_.error();
  // Van ABI 2: finalize returns with sends in flight, and those it had not
  // reported are over unreported; none is reported twice or with an error
  // other than CLOSED.
  a_.finalize();
  EXPECT_LE(a_.completed_sends(), kN);
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_LE(a_.completions(sent[i]), 1) << "send " << i;
    caravan_status st = a_.sent_status(sent[i]);
    EXPECT_TRUE(st == CARAVAN_STATUS_OK || st == CARAVAN_STATUS_CLOSED ||
                st == CARAVAN_STATUS_TIMEOUT)
        << "send " << i << ": " << status_name(st);
  }
  b_.finalize();
}

TEST_F(VanPair, PeerDisappears) {
  b_.finalize();
  // The van may refuse, fail the sends, or hold them (a transport that
  // reconnects) but every send returns promptly and nothing hangs.
  auto data = pattern(64 << 10, 11);
  constexpr size_t kMax = 2000;
  std::vector<Ticket> sent;
  caravan_status refused = CARAVAN_STATUS_OK;
  auto deadline = Clock::now() + std::chrono::seconds(3);
  while (sent.size() < kMax && Clock::now() < deadline) {
    auto t0 = Clock::now();
    Ticket t = 0;
    caravan_status s = a_.send(kB, {seg(data)}, &t);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "send blocked on a vanished peer";
    if (s != CARAVAN_STATUS_OK) {
      refused = s;
      break;
    }
    sent.push_back(t);
    bool failed = false;
    for (size_t i = 0; i < sent.size() && !failed; ++i)
      failed = a_.completions(sent[i]) && a_.sent_status(sent[i]) != CARAVAN_STATUS_OK;
    if (failed) break;
  }
  if (refused != CARAVAN_STATUS_OK) {
    EXPECT_TRUE(refused == CARAVAN_STATUS_IO || refused == CARAVAN_STATUS_CLOSED)
        << "a send to a vanished peer fails with IO or CLOSED, not " << status_name(refused);
    EXPECT_FALSE(a_.error().empty()) << "the failure is explained through set_error";
  }
  std::printf("vanished peer: %zu sends accepted, %zu done, then %s\n", sent.size(),
              a_.completed_sends(),
              refused != CARAVAN_STATUS_OK ? status_name(refused) : "no refusal");
  Message msg;
  auto t0 = Clock::now();
  EXPECT_EQ(a_.recv(100, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << "recv hung after a peer vanished";
  // Disconnecting settles whatever is still held.
  EXPECT_EQ(a_.disconnect(kB), CARAVAN_STATUS_OK) << a_.error();
  a_.wait_all_sent();
  EXPECT_EQ(a_.completed_sends(), sent.size())
      << "sends accepted for a vanished peer left unsettled";
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(a_.completions(sent[i]), 1) << i;
}

}  // namespace
}  // namespace caravan::van_check
