// Messaging: content, sizes, segments, order, completions, threads and
// timeouts between two instances in one process.
#include <cstring>
#include <thread>

#include "van_pair.h"

namespace caravan::van_check {
namespace {

TEST_F(VanPair, ExchangeBothWays) {
  auto ping = pattern(100, 1), pong = pattern(200, 2);
  Ticket sent_ping = 0, sent_pong = 0;
  ASSERT_EQ(a_.send(kB, {seg(ping)}, &sent_ping), CARAVAN_STATUS_OK) << a_.error();
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    ASSERT_EQ(m.num_segments, 1u);
    expect_same(m.segments[0], ping);
  }));
  ASSERT_EQ(b_.send(kA, {seg(pong)}, &sent_pong), CARAVAN_STATUS_OK) << b_.error();
  ASSERT_TRUE(a_.recv_one([&](const Message& m) {
    ASSERT_EQ(m.num_segments, 1u);
    expect_same(m.segments[0], pong);
  }));
  ASSERT_TRUE(a_.wait_sent(sent_ping));
  ASSERT_TRUE(b_.wait_sent(sent_pong));
  EXPECT_EQ(a_.sent_status(sent_ping), CARAVAN_STATUS_OK);
  EXPECT_EQ(b_.sent_status(sent_pong), CARAVAN_STATUS_OK);
}

TEST_F(VanPair, MessageSizes) {
  const size_t sizes[] = {0, 1, 4095, size_t{1} << 20, size_t{64} << 20};
  std::vector<std::vector<uint8_t>> bufs;
  for (size_t size : sizes) {
    if (size > props_.max_message_bytes) {
      std::printf("size %zu skipped: over max_message_bytes %zu\n", size, props_.max_message_bytes);
      continue;
    }
    bufs.push_back(pattern(size, static_cast<unsigned>(bufs.size())));
  }
  std::vector<Ticket> sent(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i)
    ASSERT_EQ(a_.send(kB, {seg(bufs[i])}, &sent[i]), CARAVAN_STATUS_OK)
        << bufs[i].size() << " bytes: " << a_.error();
  for (size_t i = 0; i < bufs.size(); ++i)
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 1u);
      expect_same(m.segments[0], bufs[i]);
    })) << bufs[i].size()
        << " bytes";
  ASSERT_TRUE(a_.wait_all_sent());
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(a_.completions(sent[i]), 1) << bufs[i].size() << " bytes";
    EXPECT_EQ(a_.sent_status(sent[i]), CARAVAN_STATUS_OK) << bufs[i].size() << " bytes";
  }
}

TEST_F(VanPair, MultiSegmentMessages) {
  // Empty segments between full ones, and sizes around small-message
  // thresholds vans commonly have (inline data, copy-versus-reference).
  const size_t sizes[] = {0, 33, 63, 64, 65, 5000, 0, 1 << 16};
  std::vector<std::vector<uint8_t>> bufs;
  for (size_t i = 0; i < 8; ++i) bufs.push_back(pattern(sizes[i], static_cast<unsigned>(i + 10)));
  const size_t most = props_.max_segments;
  std::vector<Ticket> sent(most);
  for (size_t n = 1; n <= most; ++n) {
    std::vector<SendSegment> segs;
    for (size_t i = 0; i < n; ++i) segs.push_back(seg(bufs[(i + n) % 8]));
    ASSERT_EQ(a_.send(kB, segs, &sent[n - 1]), CARAVAN_STATUS_OK)
        << n << " segments: " << a_.error();
  }
  for (size_t n = 1; n <= most; ++n)
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, n);
      for (size_t i = 0; i < n; ++i) expect_same(m.segments[i], bufs[(i + n) % 8]);
    }));
  ASSERT_TRUE(a_.wait_all_sent());
  for (size_t i = 0; i < most; ++i) EXPECT_EQ(a_.completions(sent[i]), 1);
}

TEST_F(VanPair, ThousandOutstandingArriveInOrder) {
  constexpr size_t kN = 1000;
  std::vector<uint64_t> seq(kN);
  auto payload = pattern(1000, 3);
  std::vector<Ticket> sent(kN);
  for (size_t i = 0; i < kN; ++i) {
    seq[i] = i;
    ASSERT_EQ(a_.send(kB, {seg(seq[i]), seg(payload)}, &sent[i]), CARAVAN_STATUS_OK)
        << i << ": " << a_.error();
  }
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 2u);
      EXPECT_EQ(read_u64(m.segments[0]), i);
      expect_same(m.segments[1], payload);
    }));
  ASSERT_TRUE(a_.wait_all_sent());
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(a_.completions(sent[i]), 1) << i;
    EXPECT_EQ(a_.sent_status(sent[i]), CARAVAN_STATUS_OK) << i;
  }
}

TEST_F(VanPair, SendFromFourThreads) {
  constexpr size_t kThreads = 4, kPer = 500;
  std::vector<uint64_t> tags(kThreads * kPer);
  auto payload = pattern(300, 4);
  std::vector<Ticket> sent(kThreads * kPer);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kPer; ++i) {
        size_t k = t * kPer + i;
        tags[k] = (uint64_t{t} << 32) | i;
        EXPECT_EQ(a_.send(kB, {seg(tags[k]), seg(payload)}, &sent[k]), CARAVAN_STATUS_OK);
      }
    });
  std::vector<uint64_t> next(kThreads, 0);
  for (size_t k = 0; k < kThreads * kPer; ++k)
    ASSERT_TRUE(b_.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 2u);
      uint64_t tag = read_u64(m.segments[0]);
      size_t t = tag >> 32;
      ASSERT_LT(t, kThreads);
      EXPECT_EQ(tag & 0xffffffffu, next[t]++) << "per-thread send order is kept";
      expect_same(m.segments[1], payload);
    }));
  for (auto& th : threads) th.join();
  ASSERT_TRUE(a_.wait_all_sent());
  for (size_t k = 0; k < kThreads * kPer; ++k) EXPECT_EQ(a_.completions(sent[k]), 1);
}

TEST_F(VanPair, BufferReusableOnceDone) {
  // Once the send completed the van no longer reads the memory: overwriting it must not
  // change what the receiver gets.
  auto sent = pattern(1 << 20, 8);
  auto buffer = sent;
  Ticket ticket = 0;
  ASSERT_EQ(a_.send(kB, {seg(buffer)}, &ticket), CARAVAN_STATUS_OK);
  ASSERT_TRUE(a_.wait_sent(ticket));
  std::memset(buffer.data(), 0xee, buffer.size());
  ASSERT_TRUE(b_.recv_one([&](const Message& m) { expect_same(m.segments[0], sent); }));
}

TEST_F(VanPair, ReceivedMemoryIsWritableUntilRelease) {
  // The van may read the data until the send ends (after the receiver has
  // it), and nothing here says when that is: it outlives the van.
  static const auto data = pattern(4096, 9);
  ASSERT_EQ(a_.send_unwatched(kB, {seg(data)}), CARAVAN_STATUS_OK)
      << "a send nobody watches is allowed";
  ASSERT_TRUE(b_.recv_one([&](const Message& m) {
    ASSERT_EQ(m.segments[0].len, data.size());
    std::memset(m.segments[0].data, 0, m.segments[0].len);  // the engine sums in place
  }));
}

TEST_F(VanPair, ZeroCopySend) {
  if (!(props_.caps & CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND))
    GTEST_SKIP() << "van does not offer ZERO_COPY_SEND";
  GTEST_SKIP() << "ZERO_COPY_SEND changes only performance; its contract (memory read until "
                  "done) is BufferReusableOnceDone, which every van passes";
}

TEST_F(VanPair, DeviceMemorySegments) {
  if (!(props_.caps & CARAVAN_VAN_CAP_V2_DEVICE_MEMORY))
    GTEST_SKIP() << "van does not offer DEVICE_MEMORY";
  GTEST_SKIP() << "van offers DEVICE_MEMORY, but this kit has no GPU memory to test it with";
}

TEST(Timeouts, RecvTimeoutHonoured) {
  VanInstance v(van());
  ASSERT_TRUE(v.started());
  ASSERT_EQ(v.listen(), CARAVAN_STATUS_OK) << v.error();
  Message msg;
  using std::chrono::milliseconds;
  auto t0 = Clock::now();
  EXPECT_EQ(v.recv(100, &msg), CARAVAN_STATUS_TIMEOUT);
  auto t1 = Clock::now();
  EXPECT_EQ(v.recv(0, &msg), CARAVAN_STATUS_TIMEOUT);
  auto t2 = Clock::now();
  EXPECT_GE(t1 - t0, milliseconds(95)) << "recv returned before its timeout";
  EXPECT_LT(t1 - t0, milliseconds(1000)) << "recv overslept its 100 ms timeout";
  EXPECT_LT(t2 - t1, milliseconds(50)) << "recv with timeout 0 must not wait";
}

}  // namespace
}  // namespace caravan::van_check
