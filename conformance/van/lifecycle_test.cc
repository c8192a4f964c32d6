// Lifecycle and failure: refused calls, disconnect and finalize with
// messages in flight, and a peer that goes away.
#include <cstring>
#include <thread>

#include "harness.h"

namespace caravan::van_check {
namespace {

void expect_settled(DoneLog& log, size_t n, const char* after) {
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(log.calls(i), 1) << "send " << i << " after " << after;
    caravan_status s = log.status(i);
    EXPECT_TRUE(s == CARAVAN_STATUS_OK || s == CARAVAN_STATUS_CLOSED)
        << "send " << i << " after " << after << ": " << status_name(s);
  }
}

TEST_F(VanPair, RefusedCallsNeverCallDone) {
  auto data = pattern(10, 5);
  EXPECT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_INVALID_ARGUMENT) << "connecting an id twice";
  EXPECT_EQ(ops().disconnect(a_.ctx(), 42), CARAVAN_STATUS_INVALID_ARGUMENT) << "unknown id";
  DoneLog log(1);
  EXPECT_EQ(a_.send(42, {seg(data)}, DoneLog::done, log.cookie(0)),
            CARAVAN_STATUS_INVALID_ARGUMENT) << "unknown peer";
  EXPECT_EQ(a_.send(kB, {}, DoneLog::done, log.cookie(0)), CARAVAN_STATUS_INVALID_ARGUMENT)
      << "no segments";
  std::vector<caravan_segment_v1> too_many(props_.max_segments + 1, seg(data));
  EXPECT_EQ(a_.send(kB, too_many, DoneLog::done, log.cookie(0)), CARAVAN_STATUS_INVALID_ARGUMENT)
      << props_.max_segments + 1 << " segments, max_segments is " << props_.max_segments;
  std::vector<caravan_segment_v1> nine(CARAVAN_VAN_MAX_SEGMENTS_V1 + 1, seg(data));
  EXPECT_EQ(a_.send(kB, nine, DoneLog::done, log.cookie(0)), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(log.total(), 0u) << "a refused send must never call done";
  // Still usable after the refusals.
  ASSERT_EQ(a_.send(kB, {seg(data)}), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const caravan_van_message_v1& m) { expect_same(m.segments[0], data); }));
}

TEST_F(VanPair, DisconnectWithMessagesInFlight) {
  auto mib = pattern(1 << 20, 6);
  constexpr size_t kN = 50;
  DoneLog log(kN);
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(a_.send(kB, {seg(mib)}, DoneLog::done, log.cookie(i)), CARAVAN_STATUS_OK);
  ASSERT_EQ(ops().disconnect(a_.ctx(), kB), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(log.wait_all()) << log.total() << " of " << kN << " done after disconnect";
  expect_settled(log, kN, "disconnect");
  EXPECT_EQ(a_.send(kB, {seg(mib)}), CARAVAN_STATUS_INVALID_ARGUMENT) << "a disconnected id is unknown";
  ASSERT_EQ(a_.connect(kB, b_.addr()), CARAVAN_STATUS_OK) << "the id may be connected again";
  // A pattern of its own, so it can be told from the first batch; its done
  // is awaited, since the van reads it until then.
  auto fresh = pattern(1 << 20, 16);
  DoneLog fresh_log(1);
  ASSERT_EQ(a_.send(kB, {seg(fresh)}, DoneLog::done, fresh_log.cookie(0)), CARAVAN_STATUS_OK)
      << a_.error();
  // Whatever of the first batch got through arrives before the new message.
  bool arrived = false;
  while (!arrived)
    ASSERT_TRUE(b_.recv_one([&](const caravan_van_message_v1& m) {
      const caravan_recv_segment_v1& s0 = m.segments[0];
      arrived = s0.len == fresh.size() && std::memcmp(s0.data, fresh.data(), s0.len) == 0;
      if (!arrived) expect_same(s0, mib);
    }));
  ASSERT_TRUE(fresh_log.wait_all()) << "the message after reconnecting was never settled";
  EXPECT_EQ(fresh_log.status(0), CARAVAN_STATUS_OK);
}

TEST_F(VanPair, FinalizeWithMessagesInFlight) {
  auto mib = pattern(1 << 20, 7);
  constexpr size_t kN = 200;
  DoneLog log(kN);
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(a_.send(kB, {seg(mib)}, DoneLog::done, log.cookie(i)), CARAVAN_STATUS_OK);
  // b holds one message unreleased across its own finalize.
  caravan_van_message_v1 held{};
  held.struct_size = sizeof held;
  caravan_status s = CARAVAN_STATUS_TIMEOUT;
  for (auto deadline = Clock::now() + kPatience;
       s == CARAVAN_STATUS_TIMEOUT && Clock::now() < deadline;)
    s = ops().recv(b_.ctx(), 200, &held);
  ASSERT_EQ(s, CARAVAN_STATUS_OK) << b_.error();
  a_.finalize();
  EXPECT_EQ(log.total(), kN) << "every accepted send is settled before finalize returns";
  expect_settled(log, kN, "finalize");
  b_.finalize();
}

TEST_F(VanPair, PeerDisappears) {
  b_.finalize();
  // The van may refuse, fail through done, or hold the sends (a transport
  // that reconnects) but every send returns promptly and nothing hangs.
  auto data = pattern(64 << 10, 11);
  constexpr size_t kMax = 2000;
  DoneLog log(kMax);
  size_t accepted = 0;
  caravan_status refused = CARAVAN_STATUS_OK;
  auto deadline = Clock::now() + std::chrono::seconds(3);
  while (accepted < kMax && Clock::now() < deadline) {
    auto t0 = Clock::now();
    caravan_status s = a_.send(kB, {seg(data)}, DoneLog::done, log.cookie(accepted));
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "send blocked on a vanished peer";
    if (s != CARAVAN_STATUS_OK) {
      refused = s;
      break;
    }
    ++accepted;
    bool failed = false;
    for (size_t i = 0; i < accepted && !failed; ++i)
      failed = log.calls(i) && log.status(i) != CARAVAN_STATUS_OK;
    if (failed) break;
  }
  if (refused != CARAVAN_STATUS_OK) {
    EXPECT_TRUE(refused == CARAVAN_STATUS_IO || refused == CARAVAN_STATUS_CLOSED)
        << "a send to a vanished peer fails with IO or CLOSED, not " << status_name(refused);
    EXPECT_FALSE(a_.error().empty()) << "the failure is explained through set_error";
  }
  std::printf("vanished peer: %zu sends accepted, %zu done, then %s\n", accepted, log.total(),
              refused != CARAVAN_STATUS_OK ? status_name(refused) : "no refusal");
  caravan_van_message_v1 msg{};
  msg.struct_size = sizeof msg;
  auto t0 = Clock::now();
  EXPECT_EQ(ops().recv(a_.ctx(), 100, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1)) << "recv hung after a peer vanished";
  // Disconnecting settles whatever is still held.
  EXPECT_EQ(ops().disconnect(a_.ctx(), kB), CARAVAN_STATUS_OK) << a_.error();
  log.wait_for(accepted);
  EXPECT_EQ(log.total(), accepted) << "sends accepted for a vanished peer left unsettled";
  for (size_t i = 0; i < accepted; ++i) EXPECT_EQ(log.calls(i), 1) << i;
}

}  // namespace
}  // namespace caravan::van_check
