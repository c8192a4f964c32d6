// Drives libcaravan-van-verbs.so through its C table, the way the engine
// does. Without an RDMA device (no NIC, no rxe) only the descriptor, the
// refusal at init and the hardware-free helpers run; every messaging test
// skips, saying so.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conformance/van/kit/payload.h"
#include "conformance/van/kit/van_instance.h"
#include "connection.h"
#include "device.h"

namespace {

using namespace caravan::van_check;

constexpr char kNoDevice[] = "no RDMA device on this machine";

const VanPlugin& Verbs() { return van_file(CARAVAN_VAN_VERBS_PLUGIN); }

bool HaveDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return list && n > 0;
}

// ---- What runs everywhere ---------------------------------------------------

// Magic, kind, ABI major and a stable descriptor are the kit's Loading
// checks, which VanConformance.verbs runs with or without a device.
TEST(VerbsDescriptor, IsAVanNamedVerbs) {
  EXPECT_STREQ(Verbs().descriptor->name, "verbs")
      << "DMLC_ENABLE_RDMA=1 and =ibverbs load the van named verbs";
  ASSERT_NE(Verbs().ops_v2, nullptr) << "an ABI 2 van";
  EXPECT_EQ(Verbs().ops_v2->struct_size, sizeof(caravan_van_ops_v2))
      << "the whole of today's table";
}

TEST(VerbsDescriptor, DeclaresItsParameters) {
  const caravan_plugin_descriptor* d = Verbs().descriptor;
  std::vector<std::string> names;
  for (size_t i = 0; i < d->num_params; ++i) {
    names.push_back(d->params[i].name);
    EXPECT_NE(d->params[i].description, nullptr);
  }
  for (const char* want : {"EAGER_BYTES", "MAX_REGISTERED_BYTES", "RX_DEPTH", "SEND_DEPTH"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(VerbsInit, NoDeviceIsUnavailableAndSaysSo) {
  if (HaveDevice()) GTEST_SKIP() << "this machine has an RDMA device";
  VanInstance v(Verbs());
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_UNAVAILABLE);
  EXPECT_NE(v.error().find("no RDMA device found"), std::string::npos) << v.error();
  EXPECT_NE(v.error().find("ibv_get_device_list returned 0 devices"), std::string::npos)
      << v.error();
  // Again: a refused init leaves nothing behind that breaks the next one.
  VanInstance again(Verbs());
  EXPECT_EQ(again.init_status(), CARAVAN_STATUS_UNAVAILABLE);
}

TEST(VerbsInit, MalformedParameterIsNamed) {
  VanInstance v(Verbs(), {{"EAGER_BYTES", "lots"}});
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("EAGER_BYTES"), std::string::npos) << v.error();
  EXPECT_EQ(v.context(), nullptr);
}

TEST(VerbsInit, NullArgumentsAreRefused) {
  EXPECT_EQ(init_without_host(Verbs()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(finalize_without_context(Verbs()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(properties_without_context(Verbs()), CARAVAN_STATUS_INVALID_ARGUMENT);
}

namespace vv = caravan::van_verbs;

TEST(VerbsMemlock, Verdicts) {
  const uint64_t want = 512ull << 20, need = 9ull << 20;
  EXPECT_EQ(vv::judge_memlock(UINT64_MAX, false, want, need).level, vv::MemlockVerdict::kOk);
  EXPECT_EQ(vv::judge_memlock(want, false, want, need).level, vv::MemlockVerdict::kOk);
  EXPECT_EQ(vv::judge_memlock(64 << 10, true, want, need).level, vv::MemlockVerdict::kOk)
      << "CAP_IPC_LOCK lifts the limit";
  auto warn = vv::judge_memlock(64ull << 20, false, want, need);
  EXPECT_EQ(warn.level, vv::MemlockVerdict::kWarn);
  EXPECT_NE(warn.text.find(std::to_string(64ull << 20)), std::string::npos) << warn.text;
  EXPECT_NE(warn.text.find(std::to_string(want)), std::string::npos) << warn.text;
  EXPECT_NE(warn.text.find("ulimit -l"), std::string::npos) << warn.text;
  EXPECT_NE(warn.text.find("limits.conf"), std::string::npos) << warn.text;
  auto fail = vv::judge_memlock(64 << 10, false, want, need);
  EXPECT_EQ(fail.level, vv::MemlockVerdict::kFail);
  EXPECT_NE(fail.text.find("65536"), std::string::npos) << fail.text;
  EXPECT_NE(fail.text.find(std::to_string(need)), std::string::npos) << fail.text;
  EXPECT_NE(fail.text.find("ulimit -l"), std::string::npos) << fail.text;
}

TEST(VerbsAddress, RoundTripsV4AndV6) {
  for (const char* text :
       {"verbs://10.0.0.5:9001", "verbs://[fe80::1]:65535", "verbs://127.0.0.1:1"}) {
    sockaddr_storage sa{};
    std::string why;
    ASSERT_TRUE(vv::parse_address(text, &sa, &why)) << text << ": " << why;
    EXPECT_EQ(vv::format_address(reinterpret_cast<sockaddr*>(&sa)), text);
  }
}

TEST(VerbsAddress, RefusesMalformed) {
  for (const char* text :
       {"tcp://10.0.0.5:9001", "verbs://10.0.0.5", "verbs://10.0.0.5:0", "verbs://host:80",
        "verbs://[fe80::1:80", "verbs://:80", "verbs://1.2.3.4:99999"}) {
    sockaddr_storage sa{};
    std::string why;
    EXPECT_FALSE(vv::parse_address(text, &sa, &why)) << text;
    EXPECT_FALSE(why.empty()) << text;
  }
}

TEST(VerbsAddress, LooksUpHostsAndKnowsLoopback) {
  sockaddr_storage sa{};
  std::string why;
  ASSERT_TRUE(vv::lookup_host("127.0.0.1", 4242, &sa, &why)) << why;
  EXPECT_TRUE(vv::is_loopback(reinterpret_cast<sockaddr*>(&sa)));
  EXPECT_EQ(vv::port_of(reinterpret_cast<sockaddr*>(&sa)), 4242);
  ASSERT_TRUE(vv::lookup_host("[::1]", 7, &sa, &why)) << why;
  EXPECT_TRUE(vv::is_loopback(reinterpret_cast<sockaddr*>(&sa)));
  ASSERT_TRUE(vv::lookup_host("10.1.2.3", 7, &sa, &why)) << why;
  EXPECT_FALSE(vv::is_loopback(reinterpret_cast<sockaddr*>(&sa)));
  EXPECT_FALSE(vv::lookup_host("no-such-host.invalid", 7, &sa, &why));
}

TEST(VerbsGreeting, RoundTripsAndRefusesStrangers) {
  vv::Greeting g;
  g.instance = 0x0123456789abcdefull;
  g.listen_port = 9001;
  unsigned char buf[vv::kGreetingBytes + 8] = {};  // transports may pad
  vv::encode_greeting(g, buf);
  vv::Greeting out;
  ASSERT_TRUE(vv::decode_greeting(buf, sizeof buf, &out));
  EXPECT_EQ(out.instance, g.instance);
  EXPECT_EQ(out.listen_port, 9001);
  EXPECT_FALSE(vv::decode_greeting(buf, vv::kGreetingBytes - 1, &out)) << "short";
  EXPECT_FALSE(vv::decode_greeting(nullptr, 0, &out));
  buf[0] ^= 0xff;
  EXPECT_FALSE(vv::decode_greeting(buf, sizeof buf, &out)) << "wrong magic";
}

// ---- What needs an RDMA device ----------------------------------------------

// Where both instances listen: an address of an RDMA interface
// (DMLC_NODE_HOST), else loopback, which rdma_cm routes through a device.
std::string LocalHost() {
  const char* h = std::getenv("DMLC_NODE_HOST");
  return h && *h ? h : "127.0.0.1";
}

// An instance that listens where rdma_cm routes through a device.
struct Van : VanInstance {
  Van() : VanInstance(Verbs()) {}
  caravan_status listen_local() { return listen(LocalHost().c_str(), 0); }
};

class VerbsPair : public ::testing::Test {
 protected:
  static constexpr uint64_t kA = 1, kB = 2;
  void SetUp() override {
    a_ = std::make_unique<Van>();
    if (a_->init_status() == CARAVAN_STATUS_UNAVAILABLE)
      GTEST_SKIP() << kNoDevice << ": " << a_->error();
    b_ = std::make_unique<Van>();
    ASSERT_TRUE(a_->started());
    ASSERT_TRUE(b_->started());
    ASSERT_EQ(a_->listen_local(), CARAVAN_STATUS_OK) << a_->error();
    ASSERT_EQ(b_->listen_local(), CARAVAN_STATUS_OK) << b_->error();
    ASSERT_EQ(a_->connect(kB, b_->addr()), CARAVAN_STATUS_OK) << a_->error();
    ASSERT_EQ(b_->connect(kA, a_->addr()), CARAVAN_STATUS_OK) << b_->error();
  }
  std::unique_ptr<Van> a_, b_;
};

TEST_F(VerbsPair, AddressAndProperties) {
  EXPECT_EQ(a_->addr().rfind("verbs://", 0), 0u) << a_->addr();
  caravan_van_properties_v2 p = a_->properties();
  EXPECT_TRUE(p.caps & CARAVAN_VAN_CAP_V2_RDMA);
  EXPECT_EQ(p.max_segments, static_cast<size_t>(CARAVAN_VAN_MAX_SEGMENTS_V2));
}

TEST_F(VerbsPair, SizesAndSegmentsArriveIntact) {
  const std::vector<std::vector<size_t>> shapes = {
      {0}, {1}, {4095}, {65536}, {1 << 20}, {64 << 20}, {0, 7, 0, 70000, 1, 3 << 20, 5, 9}};
  unsigned seed = 1;
  for (const auto& shape : shapes) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<SendSegment> segs;
    for (size_t len : shape) data.push_back(pattern(len, seed++));
    for (auto& d : data) segs.push_back(seg(d));
    ASSERT_EQ(a_->send(kB, segs), CARAVAN_STATUS_OK) << a_->error();
    ASSERT_TRUE(b_->recv_one([&](const Message& m) {
      ASSERT_EQ(m.num_segments, data.size());
      for (size_t i = 0; i < data.size(); ++i) expect_same(m.segments[i], data[i]);
    }));
  }
}

TEST_F(VerbsPair, ThousandMessagesInOrderEachDoneOnce) {
  constexpr size_t kN = 1000;
  std::vector<Ticket> sent(kN);
  std::vector<uint64_t> ids(kN);
  auto big = pattern(300000, 3);  // every tenth goes by remote read
  for (size_t i = 0; i < kN; ++i) {
    ids[i] = i;
    std::vector<SendSegment> segs = {seg(ids[i])};
    if (i % 10 == 0) segs.push_back(seg(big));
    ASSERT_EQ(a_->send(kB, segs, &sent[i]), CARAVAN_STATUS_OK) << a_->error();
  }
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(b_->recv_one([&](const Message& m) {
      uint64_t got;
      ASSERT_EQ(m.segments[0].len, sizeof got);
      std::memcpy(&got, m.segments[0].data, sizeof got);
      EXPECT_EQ(got, i);
      if (i % 10 == 0) expect_same(m.segments[1], big);
    }));
  ASSERT_TRUE(a_->wait_all_sent());
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(a_->completions(sent[i]), 1) << i;
}

TEST_F(VerbsPair, BothWaysAndFromFourThreads) {
  constexpr size_t kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kPerThread; ++i) {
        uint64_t v = (uint64_t(t) << 32) | i;
        EXPECT_EQ(a_->send(kB, {seg(v)}), CARAVAN_STATUS_OK);
      }
    });
  for (auto& t : threads) t.join();
  uint64_t next[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < 4 * kPerThread; ++i)
    ASSERT_TRUE(b_->recv_one([&](const Message& m) {
      uint64_t v;
      std::memcpy(&v, m.segments[0].data, sizeof v);
      EXPECT_EQ(v & 0xffffffff, next[v >> 32]++) << "per-thread order";
    }));
  auto back = pattern(2 << 20, 4);
  ASSERT_EQ(b_->send_unwatched(kA, {seg(back)}), CARAVAN_STATUS_OK);
  ASSERT_TRUE(a_->recv_one([&](const Message& m) { expect_same(m.segments[0], back); }));
}

TEST_F(VerbsPair, RefusedCallsAndRecvTimeout) {
  auto d = pattern(10, 5);
  EXPECT_EQ(a_->connect(kB, b_->addr()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->disconnect(42), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->send(42, {seg(d)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->send(kB, {}), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->connect(7, "verbs://nonsense"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->completed_sends(), 0u);
  Message msg;
  auto t0 = Clock::now();
  EXPECT_EQ(a_->recv(100, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(90));
}

TEST_F(VerbsPair, DisconnectAndFinalizeWithMessagesInFlight) {
  auto mib = pattern(1 << 20, 6);
  constexpr size_t kN = 50;
  std::vector<Ticket> first(kN);
  for (size_t i = 0; i < kN; ++i) ASSERT_EQ(a_->send(kB, {seg(mib)}, &first[i]), CARAVAN_STATUS_OK);
  ASSERT_EQ(a_->disconnect(kB), CARAVAN_STATUS_OK) << a_->error();
  ASSERT_TRUE(a_->wait_all_sent());
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(a_->completions(first[i]), 1);
  ASSERT_EQ(a_->connect(kB, b_->addr()), CARAVAN_STATUS_OK) << a_->error();
  std::vector<Ticket> second(200);
  for (size_t i = 0; i < 200; ++i)
    ASSERT_EQ(a_->send(kB, {seg(mib)}, &second[i]), CARAVAN_STATUS_OK);
  a_->finalize();
  EXPECT_EQ(a_->completed_sends(), kN + 200)
      << "every accepted send is settled before finalize returns";
  for (size_t i = 0; i < 200; ++i) EXPECT_EQ(a_->completions(second[i]), 1);
  b_->finalize();
}

}  // namespace
