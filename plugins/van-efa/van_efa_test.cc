// Drives libcaravan-van-efa.so through its C table, the way the engine
// does, over libfabric's tcp provider on loopback.
#include <atomic>
#include <memory>
#include <thread>

#include "van_efa_test_support.h"

namespace {

using namespace caravan::van_efa_test;

// Magic, kind and ABI major are the kit's Loading checks (VanConformance.efa).
TEST(VanEfaDescriptor, AbiFields) {
  const caravan_plugin_descriptor* d = Efa().descriptor;
  EXPECT_STREQ(d->name, "efa");
  ASSERT_GT(d->num_params, 0u);
  EXPECT_STREQ(d->params[0].name, "PROVIDER");
}

TEST(VanEfa, MissingProviderNamesItAndThosePresent) {
  VanInstance v(Efa(), {{"PROVIDER", "nosuchfabric"}}, kTcpProvider);
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_UNAVAILABLE);
  EXPECT_EQ(v.context(), nullptr);
  EXPECT_NE(v.error().find("'nosuchfabric'"), std::string::npos) << v.error();
  EXPECT_NE(v.error().find("providers present: "), std::string::npos) << v.error();
  EXPECT_NE(v.error().find("tcp"), std::string::npos) << v.error();
}

TEST(VanEfa, AddressAndProperties) {
  Van v;
  EXPECT_EQ(v.addr().compare(0, 6, "efa://"), 0) << v.addr();
  EXPECT_NE(v.addr().find("tcp"), std::string::npos) << v.addr();
  caravan_van_properties_v2 p = v.properties();
  EXPECT_STREQ(p.transport, "efa");
  EXPECT_EQ(p.max_segments, 8u);
  EXPECT_NE(p.caps & CARAVAN_VAN_CAP_V2_RDMA, 0u);
  EXPECT_EQ(v.connect(9, "tcp://127.0.0.1:1"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(v.connect(9, "efa://sockets/00ff"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("sockets"), std::string::npos) << v.error();
  std::vector<uint8_t> x(4);
  EXPECT_EQ(v.send(77, {seg(x)}), CARAVAN_STATUS_INVALID_ARGUMENT);
}

void SizesRoundTrip(Params params) {
  const std::vector<size_t> sizes = {0, 1, 4095, 65536, size_t{1} << 20, size_t{64} << 20};
  std::vector<Ticket> sent(sizes.size());
  std::vector<std::vector<uint8_t>> bufs;
  for (size_t i = 0; i < sizes.size(); ++i)
    bufs.push_back(pattern(sizes[i], static_cast<unsigned>(i)));
  Pair p(params);  // after the buffers, which the last send may read until the vans close
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(p.a.send(1, {seg(bufs[i])}, &sent[i]), CARAVAN_STATUS_OK) << p.a.error();
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 1u);
      expect_same(m.segments[0], bufs[i]);
      EXPECT_EQ(std::string(m.peer), p.a.addr());
    }));
  ASSERT_TRUE(p.a.wait_all_sent());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(p.a.completions(sent[i]), 1);
    EXPECT_EQ(p.a.sent_status(sent[i]), CARAVAN_STATUS_OK);
  }
  // And back the other way.
  ASSERT_EQ(p.b.send(2, {seg(bufs[5])}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(p.a.recv_one([&](const Message& m) { expect_same(m.segments[0], bufs[5]); }));
}

TEST(VanEfa, SizesZeroTo64MiB) { SizesRoundTrip({}); }
TEST(VanEfa, SizesZeroTo64MiBChunkedWithoutRma) { SizesRoundTrip({{"RMA", "0"}}); }

TEST(VanEfa, MultiSegmentSmallAndLarge) {
  Pair p;
  for (size_t big : {size_t{100}, size_t{3} << 20}) {
    std::vector<std::vector<uint8_t>> segs;
    for (size_t i = 0; i < 8; ++i)
      segs.push_back(pattern(i == 3 ? 0 : big / (i + 1), static_cast<unsigned>(i)));
    std::vector<SendSegment> view;
    for (auto& s : segs) view.push_back(seg(s));
    Ticket sent = 0;
    ASSERT_EQ(p.a.send(1, view, &sent), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 8u);
      for (size_t i = 0; i < 8; ++i) expect_same(m.segments[i], segs[i]);
    }));
    ASSERT_TRUE(p.a.wait_sent(sent)) << "segs are read until the send completes";
  }
  std::vector<SendSegment> nine(9, SendSegment{nullptr, 0});
  EXPECT_EQ(p.a.send(1, nine), CARAVAN_STATUS_INVALID_ARGUMENT);
}

// 1000 sends in flight at once, small ones overtaking large ones on the
// wire; they must come out in send order with their bytes intact.
TEST(VanEfa, ThousandOutstandingInterleavedKeepOrder) {
  Pair p;
  constexpr size_t kN = 1000;
  std::vector<uint64_t> ids(kN);
  std::vector<std::vector<uint8_t>> bodies(kN);
  std::vector<Ticket> sent(kN);
  for (size_t i = 0; i < kN; ++i) {
    ids[i] = i;
    size_t n = i % 50 == 7 ? (size_t{1} << 20) + i : i % 3 == 0 ? 0 : i * 3;
    bodies[i] = pattern(n, static_cast<unsigned>(i));
    ASSERT_EQ(p.a.send(1, {seg(ids[i]), seg(bodies[i])}, &sent[i]), CARAVAN_STATUS_OK);
  }
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, 2u);
      ASSERT_EQ(read_u64(m.segments[0]), i);
      expect_same(m.segments[1], bodies[i]);
    }));
  ASSERT_TRUE(p.a.wait_all_sent());
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(p.a.completions(sent[i]), 1) << i;
}

TEST(VanEfa, ConcurrentSendersKeepTheirOrder) {
  constexpr size_t kThreads = 4, kEach = 200;
  // Declared before the vans, so they outlive them: sends are not awaited,
  // and a van may read a buffer until its done, after the message arrived.
  std::vector<std::vector<uint64_t>> tags(kThreads, std::vector<uint64_t>(kEach));
  std::vector<uint8_t> big = pattern(300000, 5);
  Pair p;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kEach; ++i) {
        tags[t][i] = t << 32 | i;
        std::vector<SendSegment> segs{seg(tags[t][i])};
        if (i % 20 == t) segs.push_back(seg(big));
        EXPECT_EQ(p.a.send(1, segs), CARAVAN_STATUS_OK);
      }
    });
  std::vector<uint64_t> next(kThreads, 0);
  for (size_t k = 0; k < kThreads * kEach; ++k)
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) {
      uint64_t tag = read_u64(m.segments[0]);
      size_t t = tag >> 32;
      ASSERT_LT(t, kThreads);
      EXPECT_EQ(tag & 0xffffffff, next[t]++);
      if (m.num_segments == 2) expect_same(m.segments[1], big);
    }));
  for (auto& th : threads) th.join();
}

// Fresh buffers every round, yet registration stays within the limit and
// is reused: the figure comes from the finalize log line.
TEST(VanEfa, RegistrationBoundedOverDistinctBuffers) {
  constexpr size_t kLimit = size_t{24} << 20;
  Pair p({{"MAX_REGISTERED_BYTES", std::to_string(kLimit)}, {"RX_DEPTH", "8"}});
  constexpr size_t kRounds = 200;
  for (size_t r = 0; r < kRounds; ++r) {
    auto a = std::make_unique<std::vector<uint8_t>>(
        pattern((size_t{1} << 20) + r * 4096, static_cast<unsigned>(r)));
    Ticket sent = 0;
    ASSERT_EQ(p.a.send(1, {seg(*a)}, &sent), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) { expect_same(m.segments[0], *a); }));
    // The van may read the buffer until the send completes, even after the message has
    // arrived: ASan caught the provider's last sendmsg from it returning
    // after the receiver had the message and the buffer was freed.
    ASSERT_TRUE(p.a.wait_sent(sent)) << "round " << r << ": the send was never settled";
  }
  for (Van* v : {&p.a, &p.b}) {
    v->finalize();
    std::string line = v->host().find_line("registered memory:");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex("peak (\\d+) bytes.* (\\d+) registrations")))
        << line;
    EXPECT_LE(std::stoull(m[1]), kLimit) << line;
    EXPECT_LT(std::stoull(m[2]), kRounds / 4) << line;
  }
}

// Sends n fresh buffers of a little over 1 MiB each from `from` to peer 1;
// they stay alive in the returned vector, as zero copy needs until the
// sends complete.
std::vector<std::vector<uint8_t>> SendMiBs(Van& from, size_t n, unsigned seed,
                                           std::vector<Ticket>* tickets = nullptr) {
  std::vector<std::vector<uint8_t>> sent;
  sent.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    sent.push_back(pattern((size_t{1} << 20) + i * 4096, seed + static_cast<unsigned>(i)));
    Ticket t = 0;
    caravan_status s = from.send(1, {seg(sent[i])}, &t);
    if (tickets) tickets->push_back(t);
    EXPECT_EQ(s, CARAVAN_STATUS_OK) << "send " << i << ": " << from.error();
  }
  return sent;
}

// 4 MiB for sending and 4 MiB for receiving: a few 1 MiB messages fill either.
const Params kSmallLimit{{"MAX_REGISTERED_BYTES", std::to_string(size_t{8} << 20)},
                         {"RX_DEPTH", "8"}};

// The engine may hold received messages for as long as it likes (a server
// keeps a worker's push as its running sum until the other workers' pushes
// arrive), so held messages filling the receive pool must not stop the
// next ones from arriving.
TEST(VanEfa, ReceiverHoldingEveryMessageStillGetsMore) {
  constexpr size_t kN = 12;
  Pair p(kSmallLimit);
  auto sent = SendMiBs(p.a, kN, 0);
  std::vector<Message> held(kN);
  for (size_t i = 0; i < kN; ++i) {
    caravan_status s = p.b.wait_recv(&held[i], std::chrono::seconds(30));
    ASSERT_EQ(s, CARAVAN_STATUS_OK)
        << "message " << i << " of " << kN << " not received within 30 s while " << i
        << " are held: " << p.b.error();
    expect_same(held[i].segments[0], sent[i]);
  }
  for (auto& m : held) EXPECT_EQ(p.b.release(m), CARAVAN_STATUS_OK);
  p.a.finalize();  // before `sent` goes: the sends were not awaited
}

// Zero copy registers each large send's own memory until the receiver has
// read it; more sends in flight than the limit allows wait their turn
// rather than push registration past it, and each done says OK.
TEST(VanEfa, ZeroCopySendsBeyondTheLimitWaitTheirTurn) {
  constexpr size_t kN = 20;
  Pair p(kSmallLimit);
  std::vector<Ticket> tickets;
  auto sent = SendMiBs(p.a, kN, 50, &tickets);
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(p.b.recv_one([&](const Message& m) { expect_same(m.segments[0], sent[i]); }))
        << "message " << i;
  ASSERT_TRUE(p.a.wait_all_sent());
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(p.a.completions(tickets[i]), 1) << "send " << i;
    EXPECT_EQ(p.a.sent_status(tickets[i]), CARAVAN_STATUS_OK) << "send " << i;
  }
  p.a.finalize();
  std::string line = p.a.host().find_line("registered memory:");
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(line, m, std::regex("peak (\\d+) bytes.*, (\\d+) of callers' memory")))
      << line;
  EXPECT_LE(std::stoull(m[1]), size_t{8} << 20) << line;
  EXPECT_EQ(std::stoull(m[2]), kN) << "every send registered its own memory: " << line;
}

TEST(VanEfa, FinalizeWakesBlockedRecvAndFailsLaterCalls) {
  Van v;
  std::atomic<caravan_status> got{1};
  std::thread t([&] {
    Message msg;
    got = v.recv(-1, &msg);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  v.finalize();
  t.join();
  EXPECT_EQ(got.load(), CARAVAN_STATUS_CLOSED);
}

TEST(VanEfa, DisconnectThenReconnect) {
  std::vector<uint8_t> x = pattern(10, 1);  // outlives the vans, which may read it until they close
  Pair p;
  ASSERT_EQ(p.a.disconnect(1), CARAVAN_STATUS_OK);
  EXPECT_EQ(p.a.send(1, {seg(x)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(p.a.connect(1, p.b.addr()), CARAVAN_STATUS_OK);
  ASSERT_EQ(p.a.send(1, {seg(x)}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(p.b.recv_one([&](const Message& m) { expect_same(m.segments[0], x); }));
}

}  // namespace
