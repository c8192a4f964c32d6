// Drives libcaravan-van-verbs.so through its C table, the way the engine
// does. Without an RDMA device (no NIC, no rxe) only the descriptor, the
// refusal at init and the hardware-free helpers run; every messaging test
// skips, saying so.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "caravan/plugin/van_v1.h"
#include "connection.h"
#include "device.h"

namespace {

using Params = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(60);
constexpr char kNoDevice[] = "no RDMA device on this machine";

const caravan_plugin_descriptor* Descriptor() {
  static const caravan_plugin_descriptor* desc = [] {
    void* handle = dlopen(CARAVAN_VAN_VERBS_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      ADD_FAILURE() << "dlopen: " << dlerror();
      return static_cast<const caravan_plugin_descriptor*>(nullptr);
    }
    auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(handle, CARAVAN_PLUGIN_ENTRY_SYMBOL));
    return entry ? entry() : nullptr;
  }();
  return desc;
}

const caravan_van_ops_v1& Ops() { return *static_cast<const caravan_van_ops_v1*>(Descriptor()->ops); }

bool HaveDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list) ibv_free_device_list(list);
  return list && n > 0;
}

struct FakeHost {
  caravan_host_v1 table{};
  Params params;
  std::mutex mu;
  std::string last_error;
  std::vector<std::string> lines;

  explicit FakeHost(Params p) : params(std::move(p)) {
    table.struct_size = sizeof table;
    table.host_ctx = this;
    table.log = [](void* ctx, caravan_log_level level, const char* message) {
      if (level >= CARAVAN_LOG_WARNING) std::fprintf(stderr, "[van-verbs %d] %s\n", static_cast<int>(level), message);
      auto* self = static_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu);
      self->lines.push_back(message);
    };
    table.get_param = [](void* ctx, const char* name) -> const char* {
      auto* self = static_cast<FakeHost*>(ctx);
      auto it = self->params.find(name);
      return it == self->params.end() ? nullptr : it->second.c_str();
    };
    table.get_env = [](void*, const char* name) -> const char* { return std::getenv(name); };
    table.set_error = [](void* ctx, const char* message) {
      auto* self = static_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu);
      self->last_error = message;
    };
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu);
    return last_error;
  }
};

// ---- What runs everywhere ---------------------------------------------------

TEST(VerbsDescriptor, IsAVanNamedVerbs) {
  const caravan_plugin_descriptor* d = Descriptor();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d->abi_major, static_cast<uint32_t>(CARAVAN_VAN_ABI_MAJOR_V1));
  EXPECT_EQ(d->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_VAN));
  EXPECT_EQ(d->struct_size, sizeof(caravan_plugin_descriptor));
  EXPECT_STREQ(d->name, "verbs") << "DMLC_ENABLE_RDMA=1 and =ibverbs load the van named verbs";
  ASSERT_NE(d->ops, nullptr);
  EXPECT_EQ(Ops().struct_size, sizeof(caravan_van_ops_v1));
  auto entry = reinterpret_cast<caravan_plugin_entry_fn>(
      dlsym(dlopen(CARAVAN_VAN_VERBS_PLUGIN, RTLD_NOW | RTLD_NOLOAD), CARAVAN_PLUGIN_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry(), d) << "the same descriptor every time";
}

TEST(VerbsDescriptor, DeclaresItsParameters) {
  const caravan_plugin_descriptor* d = Descriptor();
  ASSERT_NE(d, nullptr);
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
  FakeHost host(Params{});
  void* ctx = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_UNAVAILABLE);
  EXPECT_NE(host.error().find("no RDMA device found"), std::string::npos) << host.error();
  EXPECT_NE(host.error().find("ibv_get_device_list returned 0 devices"), std::string::npos) << host.error();
  // Again: a refused init leaves nothing behind that breaks the next one.
  FakeHost again(Params{});
  EXPECT_EQ(Ops().init(&again.table, &ctx), CARAVAN_STATUS_UNAVAILABLE);
}

TEST(VerbsInit, MalformedParameterIsNamed) {
  FakeHost host(Params{{"EAGER_BYTES", "lots"}});
  void* ctx = nullptr;
  EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(host.error().find("EAGER_BYTES"), std::string::npos) << host.error();
  EXPECT_EQ(ctx, nullptr);
}

TEST(VerbsInit, NullArgumentsAreRefused) {
  EXPECT_EQ(Ops().init(nullptr, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Ops().finalize(nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(Ops().properties(nullptr, &p), CARAVAN_STATUS_INVALID_ARGUMENT);
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
  for (const char* text : {"verbs://10.0.0.5:9001", "verbs://[fe80::1]:65535", "verbs://127.0.0.1:1"}) {
    sockaddr_storage sa{};
    std::string why;
    ASSERT_TRUE(vv::parse_address(text, &sa, &why)) << text << ": " << why;
    EXPECT_EQ(vv::format_address(reinterpret_cast<sockaddr*>(&sa)), text);
  }
}

TEST(VerbsAddress, RefusesMalformed) {
  for (const char* text : {"tcp://10.0.0.5:9001", "verbs://10.0.0.5", "verbs://10.0.0.5:0", "verbs://host:80",
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

struct Van {
  FakeHost host;
  void* ctx = nullptr;
  std::string addr;
  caravan_status init_status;

  explicit Van(Params params = {}) : host(std::move(params)) { init_status = Ops().init(&host.table, &ctx); }
  ~Van() {
    if (ctx) Ops().finalize(ctx);
  }
  void Finalize() {
    EXPECT_EQ(Ops().finalize(ctx), CARAVAN_STATUS_OK) << host.error();
    ctx = nullptr;
  }
  caravan_status Listen() {
    char buf[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
    caravan_status s = Ops().listen(ctx, LocalHost().c_str(), 0, buf, sizeof buf);
    if (s == CARAVAN_STATUS_OK) addr = buf;
    return s;
  }
  caravan_status Send(uint64_t peer, const std::vector<caravan_segment_v1>& segs,
                      caravan_send_done_fn done = nullptr, void* cookie = nullptr) {
    return Ops().send(ctx, peer, segs.data(), segs.size(), done, cookie);
  }
  bool RecvOne(const std::function<void(const caravan_van_message_v1&)>& check) {
    auto deadline = Clock::now() + kPatience;
    while (Clock::now() < deadline) {
      caravan_van_message_v1 msg{};
      msg.struct_size = sizeof msg;
      caravan_status s = Ops().recv(ctx, 200, &msg);
      if (s == CARAVAN_STATUS_TIMEOUT) continue;
      EXPECT_EQ(s, CARAVAN_STATUS_OK) << host.error();
      if (s != CARAVAN_STATUS_OK) return false;
      check(msg);
      EXPECT_EQ(Ops().release(ctx, &msg), CARAVAN_STATUS_OK);
      return true;
    }
    ADD_FAILURE() << "no message within the deadline";
    return false;
  }
};

struct Dones {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> calls;
  std::vector<caravan_status> status;
  size_t total = 0;
  struct Slot {
    Dones* d;
    size_t i;
  };
  std::vector<Slot> slots;
  explicit Dones(size_t n) : calls(n), status(n, 1) {
    for (size_t i = 0; i < n; ++i) slots.push_back({this, i});
  }
  void* cookie(size_t i) { return &slots[i]; }
  static void done(void* cookie, caravan_status s) {
    auto* slot = static_cast<Slot*>(cookie);
    std::lock_guard<std::mutex> lock(slot->d->mu);
    ++slot->d->calls[slot->i];
    slot->d->status[slot->i] = s;
    ++slot->d->total;
    slot->d->cv.notify_all();
  }
  bool wait_all() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kPatience, [&] { return total >= calls.size(); });
  }
};

std::vector<uint8_t> Pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131u + (i >> 9) + seed * 7u);
  return v;
}

void ExpectSame(const caravan_recv_segment_v1& got, const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.len, want.size());
  if (!want.empty()) {
    EXPECT_EQ(std::memcmp(got.data, want.data(), want.size()), 0) << "content differs";
  }
}

class VerbsPair : public ::testing::Test {
 protected:
  static constexpr uint64_t kA = 1, kB = 2;
  void SetUp() override {
    a_ = std::make_unique<Van>();
    if (a_->init_status == CARAVAN_STATUS_UNAVAILABLE) GTEST_SKIP() << kNoDevice << ": " << a_->host.error();
    b_ = std::make_unique<Van>();
    ASSERT_EQ(a_->init_status, CARAVAN_STATUS_OK) << a_->host.error();
    ASSERT_EQ(b_->init_status, CARAVAN_STATUS_OK) << b_->host.error();
    ASSERT_EQ(a_->Listen(), CARAVAN_STATUS_OK) << a_->host.error();
    ASSERT_EQ(b_->Listen(), CARAVAN_STATUS_OK) << b_->host.error();
    ASSERT_EQ(Ops().connect(a_->ctx, kB, b_->addr.c_str()), CARAVAN_STATUS_OK) << a_->host.error();
    ASSERT_EQ(Ops().connect(b_->ctx, kA, a_->addr.c_str()), CARAVAN_STATUS_OK) << b_->host.error();
  }
  std::unique_ptr<Van> a_, b_;
};

TEST_F(VerbsPair, AddressAndProperties) {
  EXPECT_EQ(a_->addr.rfind("verbs://", 0), 0u) << a_->addr;
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(Ops().properties(a_->ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_TRUE(p.caps & CARAVAN_VAN_CAP_RDMA);
  EXPECT_EQ(p.max_segments, static_cast<size_t>(CARAVAN_VAN_MAX_SEGMENTS_V1));
}

TEST_F(VerbsPair, SizesAndSegmentsArriveIntact) {
  const std::vector<std::vector<size_t>> shapes = {
      {0}, {1}, {4095}, {65536}, {1 << 20}, {64 << 20}, {0, 7, 0, 70000, 1, 3 << 20, 5, 9}};
  unsigned seed = 1;
  for (const auto& shape : shapes) {
    std::vector<std::vector<uint8_t>> data;
    std::vector<caravan_segment_v1> segs;
    for (size_t len : shape) data.push_back(Pattern(len, seed++));
    for (auto& d : data) segs.push_back({d.data(), d.size()});
    ASSERT_EQ(a_->Send(kB, segs), CARAVAN_STATUS_OK) << a_->host.error();
    ASSERT_TRUE(b_->RecvOne([&](const caravan_van_message_v1& m) {
      ASSERT_EQ(m.num_segments, data.size());
      for (size_t i = 0; i < data.size(); ++i) ExpectSame(m.segments[i], data[i]);
    }));
  }
}

TEST_F(VerbsPair, ThousandMessagesInOrderEachDoneOnce) {
  constexpr size_t kN = 1000;
  Dones dones(kN);
  std::vector<uint64_t> ids(kN);
  auto big = Pattern(300000, 3);  // every tenth goes by remote read
  for (size_t i = 0; i < kN; ++i) {
    ids[i] = i;
    std::vector<caravan_segment_v1> segs = {{&ids[i], sizeof ids[i]}};
    if (i % 10 == 0) segs.push_back({big.data(), big.size()});
    ASSERT_EQ(a_->Send(kB, segs, Dones::done, dones.cookie(i)), CARAVAN_STATUS_OK) << a_->host.error();
  }
  for (size_t i = 0; i < kN; ++i)
    ASSERT_TRUE(b_->RecvOne([&](const caravan_van_message_v1& m) {
      uint64_t got;
      ASSERT_EQ(m.segments[0].len, sizeof got);
      std::memcpy(&got, m.segments[0].data, sizeof got);
      EXPECT_EQ(got, i);
      if (i % 10 == 0) ExpectSame(m.segments[1], big);
    }));
  ASSERT_TRUE(dones.wait_all());
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(dones.calls[i], 1) << i;
}

TEST_F(VerbsPair, BothWaysAndFromFourThreads) {
  constexpr size_t kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < kPerThread; ++i) {
        uint64_t v = (uint64_t(t) << 32) | i;
        EXPECT_EQ(a_->Send(kB, {{&v, sizeof v}}), CARAVAN_STATUS_OK);
      }
    });
  for (auto& t : threads) t.join();
  uint64_t next[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < 4 * kPerThread; ++i)
    ASSERT_TRUE(b_->RecvOne([&](const caravan_van_message_v1& m) {
      uint64_t v;
      std::memcpy(&v, m.segments[0].data, sizeof v);
      EXPECT_EQ(v & 0xffffffff, next[v >> 32]++) << "per-thread order";
    }));
  auto back = Pattern(2 << 20, 4);
  ASSERT_EQ(Ops().send(b_->ctx, kA, std::vector<caravan_segment_v1>{{back.data(), back.size()}}.data(), 1,
                       nullptr, nullptr),
            CARAVAN_STATUS_OK);
  ASSERT_TRUE(a_->RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], back); }));
}

TEST_F(VerbsPair, RefusedCallsAndRecvTimeout) {
  auto d = Pattern(10, 5);
  Dones dones(1);
  EXPECT_EQ(Ops().connect(a_->ctx, kB, b_->addr.c_str()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Ops().disconnect(a_->ctx, 42), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->Send(42, {{d.data(), d.size()}}, Dones::done, dones.cookie(0)), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(a_->Send(kB, {}, Dones::done, dones.cookie(0)), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Ops().connect(a_->ctx, 7, "verbs://nonsense"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(dones.total, 0u);
  caravan_van_message_v1 msg{};
  msg.struct_size = sizeof msg;
  auto t0 = Clock::now();
  EXPECT_EQ(Ops().recv(a_->ctx, 100, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(90));
}

TEST_F(VerbsPair, DisconnectAndFinalizeWithMessagesInFlight) {
  auto mib = Pattern(1 << 20, 6);
  constexpr size_t kN = 50;
  Dones first(kN);
  for (size_t i = 0; i < kN; ++i)
    ASSERT_EQ(a_->Send(kB, {{mib.data(), mib.size()}}, Dones::done, first.cookie(i)), CARAVAN_STATUS_OK);
  ASSERT_EQ(Ops().disconnect(a_->ctx, kB), CARAVAN_STATUS_OK) << a_->host.error();
  ASSERT_TRUE(first.wait_all());
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(first.calls[i], 1);
  ASSERT_EQ(Ops().connect(a_->ctx, kB, b_->addr.c_str()), CARAVAN_STATUS_OK) << a_->host.error();
  Dones second(200);
  for (size_t i = 0; i < 200; ++i)
    ASSERT_EQ(a_->Send(kB, {{mib.data(), mib.size()}}, Dones::done, second.cookie(i)), CARAVAN_STATUS_OK);
  a_->Finalize();
  EXPECT_EQ(second.total, 200u) << "every accepted send is settled before finalize returns";
  for (size_t i = 0; i < 200; ++i) EXPECT_EQ(second.calls[i], 1);
  b_->Finalize();
}

}  // namespace
