// Drives libcaravan-van-efa.so through its C table, the way the engine
// does, over libfabric's tcp provider on loopback.
#include "van_efa_test_support.h"

namespace {

using namespace caravan::van_efa_test;

TEST(VanEfaDescriptor, AbiFields) {
  const caravan_plugin_descriptor* d = Descriptor();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d->abi_major, static_cast<uint32_t>(CARAVAN_VAN_ABI_MAJOR_V1));
  EXPECT_EQ(d->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_VAN));
  EXPECT_STREQ(d->name, "efa");
  ASSERT_GT(d->num_params, 0u);
  EXPECT_STREQ(d->params[0].name, "PROVIDER");
}

TEST(VanEfa, MissingProviderNamesItAndThosePresent) {
  FakeHost host(Params{{"PROVIDER", "nosuchfabric"}});
  void* ctx = nullptr;
  EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_UNAVAILABLE);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(host.error().find("'nosuchfabric'"), std::string::npos) << host.error();
  EXPECT_NE(host.error().find("providers present: "), std::string::npos) << host.error();
  EXPECT_NE(host.error().find("tcp"), std::string::npos) << host.error();
}

TEST(VanEfa, AddressAndProperties) {
  Van v;
  EXPECT_EQ(v.addr.compare(0, 6, "efa://"), 0) << v.addr;
  EXPECT_NE(v.addr.find("tcp"), std::string::npos) << v.addr;
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(Ops().properties(v.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_STREQ(p.transport, "efa");
  EXPECT_EQ(p.max_segments, 8u);
  EXPECT_NE(p.caps & CARAVAN_VAN_CAP_RDMA, 0u);
  EXPECT_EQ(Ops().connect(v.ctx, 9, "tcp://127.0.0.1:1"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Ops().connect(v.ctx, 9, "efa://sockets/00ff"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.host.error().find("sockets"), std::string::npos) << v.host.error();
  std::vector<uint8_t> x(4);
  EXPECT_EQ(v.Send(77, {Seg(x)}), CARAVAN_STATUS_INVALID_ARGUMENT);
}

void SizesRoundTrip(Params params) {
  const std::vector<size_t> sizes = {0, 1, 4095, 65536, size_t{1} << 20, size_t{64} << 20};
  DoneLog log(sizes.size());
  std::vector<std::vector<uint8_t>> bufs;
  for (size_t i = 0; i < sizes.size(); ++i) bufs.push_back(Pattern(sizes[i], static_cast<unsigned>(i)));
  Pair p(params);  // after the buffers, which the last send may read until the vans close
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_EQ(p.a.Send(1, {Seg(bufs[i])}, &DoneLog::Done, log.cookie(i)), CARAVAN_STATUS_OK)
        << p.a.host.error();
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) {
      ASSERT_EQ(m.num_segments, 1u);
      ExpectSame(m.segments[0], bufs[i]);
      EXPECT_EQ(std::string(m.peer), p.a.addr);
    }));
  ASSERT_TRUE(log.WaitAll());
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(log.calls(i), 1);
    EXPECT_EQ(log.status(i), CARAVAN_STATUS_OK);
  }
  // And back the other way.
  ASSERT_EQ(p.b.Send(2, {Seg(bufs[5])}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(p.a.RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], bufs[5]); }));
}

TEST(VanEfa, SizesZeroTo64MiB) { SizesRoundTrip({}); }
TEST(VanEfa, SizesZeroTo64MiBChunkedWithoutRma) { SizesRoundTrip({{"RMA", "0"}}); }

TEST(VanEfa, MultiSegmentSmallAndLarge) {
  Pair p;
  for (size_t big : {size_t{100}, size_t{3} << 20}) {
    std::vector<std::vector<uint8_t>> segs;
    for (size_t i = 0; i < 8; ++i) segs.push_back(Pattern(i == 3 ? 0 : big / (i + 1), static_cast<unsigned>(i)));
    std::vector<caravan_segment_v1> view;
    for (auto& s : segs) view.push_back(Seg(s));
    DoneLog log(1);
    ASSERT_EQ(p.a.Send(1, view, &DoneLog::Done, log.cookie(0)), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) {
      ASSERT_EQ(m.num_segments, 8u);
      for (size_t i = 0; i < 8; ++i) ExpectSame(m.segments[i], segs[i]);
    }));
    ASSERT_TRUE(log.WaitAll()) << "segs are read until done";
  }
  std::vector<caravan_segment_v1> nine(9, caravan_segment_v1{nullptr, 0});
  EXPECT_EQ(p.a.Send(1, nine), CARAVAN_STATUS_INVALID_ARGUMENT);
}

// 1000 sends in flight at once, small ones overtaking large ones on the
// wire; they must come out in send order with their bytes intact.
TEST(VanEfa, ThousandOutstandingInterleavedKeepOrder) {
  Pair p;
  constexpr size_t kN = 1000;
  std::vector<uint64_t> ids(kN);
  std::vector<std::vector<uint8_t>> bodies(kN);
  DoneLog log(kN);
  for (size_t i = 0; i < kN; ++i) {
    ids[i] = i;
    size_t n = i % 50 == 7 ? (size_t{1} << 20) + i : i % 3 == 0 ? 0 : i * 3;
    bodies[i] = Pattern(n, static_cast<unsigned>(i));
    ASSERT_EQ(p.a.Send(1, {Seg(ids[i]), Seg(bodies[i])}, &DoneLog::Done, log.cookie(i)), CARAVAN_STATUS_OK);
  }
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) {
      ASSERT_EQ(m.num_segments, 2u);
      ASSERT_EQ(ReadU64(m.segments[0]), i);
      ExpectSame(m.segments[1], bodies[i]);
    }));
  ASSERT_TRUE(log.WaitAll());
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(log.calls(i), 1) << i;
}

TEST(VanEfa, ConcurrentSendersKeepTheirOrder) {
  constexpr size_t kThreads = 4, kEach = 200;
  // Declared before the vans, so they outlive them: sends are not awaited,
  // and a van may read a buffer until its done, after the message arrived.
  std::vector<std::vector<uint64_t>> tags(kThreads, std::vector<uint64_t>(kEach));
  std::vector<uint8_t> big = Pattern(300000, 5);
  Pair p;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kEach; ++i) {
        tags[t][i] = t << 32 | i;
        std::vector<caravan_segment_v1> segs{Seg(tags[t][i])};
        if (i % 20 == t) segs.push_back(Seg(big));
        EXPECT_EQ(p.a.Send(1, segs), CARAVAN_STATUS_OK);
      }
    });
  std::vector<uint64_t> next(kThreads, 0);
  for (size_t k = 0; k < kThreads * kEach; ++k)
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) {
      uint64_t tag = ReadU64(m.segments[0]);
      size_t t = tag >> 32;
      ASSERT_LT(t, kThreads);
      EXPECT_EQ(tag & 0xffffffff, next[t]++);
      if (m.num_segments == 2) ExpectSame(m.segments[1], big);
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
    auto a = std::make_unique<std::vector<uint8_t>>(Pattern((size_t{1} << 20) + r * 4096, static_cast<unsigned>(r)));
    DoneLog log(1);
    ASSERT_EQ(p.a.Send(1, {Seg(*a)}, DoneLog::Done, log.cookie(0)), CARAVAN_STATUS_OK);
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], *a); }));
    // The van may read the buffer until done, even after the message has
    // arrived: ASan caught the provider's last sendmsg from it returning
    // after the receiver had the message and the buffer was freed.
    ASSERT_TRUE(log.WaitAll()) << "round " << r << ": the send was never settled";
  }
  for (Van* v : {&p.a, &p.b}) {
    v->Finalize();
    std::string line = v->host.find_line("registered memory:");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, std::regex("peak (\\d+) bytes.* (\\d+) registrations"))) << line;
    EXPECT_LE(std::stoull(m[1]), kLimit) << line;
    EXPECT_LT(std::stoull(m[2]), kRounds / 4) << line;
  }
}

// Sends n fresh buffers of a little over 1 MiB each from `from` to peer 1;
// they stay alive in the returned vector, as zero copy needs until done.
std::vector<std::vector<uint8_t>> SendMiBs(Van& from, size_t n, unsigned seed, DoneLog* log = nullptr) {
  std::vector<std::vector<uint8_t>> sent;
  sent.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    sent.push_back(Pattern((size_t{1} << 20) + i * 4096, seed + static_cast<unsigned>(i)));
    caravan_status s = from.Send(1, {Seg(sent[i])}, log ? DoneLog::Done : nullptr, log ? log->cookie(i) : nullptr);
    EXPECT_EQ(s, CARAVAN_STATUS_OK) << "send " << i << ": " << from.host.error();
  }
  return sent;
}

// 4 MiB for sending and 4 MiB for receiving: a few 1 MiB messages fill either.
const Params kSmallLimit{{"MAX_REGISTERED_BYTES", std::to_string(size_t{8} << 20)}, {"RX_DEPTH", "8"}};

// The engine may hold received messages for as long as it likes (a server
// keeps a worker's push as its running sum until the other workers' pushes
// arrive), so held messages filling the receive pool must not stop the
// next ones from arriving.
TEST(VanEfa, ReceiverHoldingEveryMessageStillGetsMore) {
  constexpr size_t kN = 12;
  Pair p(kSmallLimit);
  auto sent = SendMiBs(p.a, kN, 0);
  std::vector<caravan_van_message_v1> held(kN);
  for (size_t i = 0; i < kN; ++i) {
    held[i].struct_size = sizeof held[i];
    caravan_status s = CARAVAN_STATUS_TIMEOUT;
    for (auto deadline = Clock::now() + std::chrono::seconds(30);
         s == CARAVAN_STATUS_TIMEOUT && Clock::now() < deadline;)
      s = Ops().recv(p.b.ctx, 200, &held[i]);
    ASSERT_EQ(s, CARAVAN_STATUS_OK) << "message " << i << " of " << kN << " not received within 30 s while "
                                    << i << " are held: " << p.b.host.error();
    ExpectSame(held[i].segments[0], sent[i]);
  }
  for (auto& m : held) EXPECT_EQ(Ops().release(p.b.ctx, &m), CARAVAN_STATUS_OK);
  p.a.Finalize();  // before `sent` goes: the sends were not awaited
}

// Zero copy registers each large send's own memory until the receiver has
// read it; more sends in flight than the limit allows wait their turn
// rather than push registration past it, and each done says OK.
TEST(VanEfa, ZeroCopySendsBeyondTheLimitWaitTheirTurn) {
  constexpr size_t kN = 20;
  Pair p(kSmallLimit);
  DoneLog log(kN);
  auto sent = SendMiBs(p.a, kN, 50, &log);
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], sent[i]); }))
        << "message " << i;
  ASSERT_TRUE(log.WaitAll());
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(log.calls(i), 1) << "send " << i;
    EXPECT_EQ(log.status(i), CARAVAN_STATUS_OK) << "send " << i;
  }
  p.a.Finalize();
  std::string line = p.a.host.find_line("registered memory:");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(line, m, std::regex("peak (\\d+) bytes.*, (\\d+) of callers' memory"))) << line;
  EXPECT_LE(std::stoull(m[1]), size_t{8} << 20) << line;
  EXPECT_EQ(std::stoull(m[2]), kN) << "every send registered its own memory: " << line;
}

TEST(VanEfa, FinalizeWakesBlockedRecvAndFailsLaterCalls) {
  Van v;
  std::atomic<caravan_status> got{1};
  std::thread t([&] {
    caravan_van_message_v1 msg{};
    msg.struct_size = sizeof msg;
    got = Ops().recv(v.ctx, -1, &msg);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  v.Finalize();
  t.join();
  EXPECT_EQ(got.load(), CARAVAN_STATUS_CLOSED);
}

TEST(VanEfa, DisconnectThenReconnect) {
  std::vector<uint8_t> x = Pattern(10, 1);  // outlives the vans, which may read it until they close
  Pair p;
  ASSERT_EQ(Ops().disconnect(p.a.ctx, 1), CARAVAN_STATUS_OK);
  EXPECT_EQ(p.a.Send(1, {Seg(x)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(Ops().connect(p.a.ctx, 1, p.b.addr.c_str()), CARAVAN_STATUS_OK);
  ASSERT_EQ(p.a.Send(1, {Seg(x)}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(p.b.RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], x); }));
}

}  // namespace
