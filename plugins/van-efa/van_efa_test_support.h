// What the van-efa tests share: the plugin loaded through its C table, a
// host that records the van's log, van pairs over libfabric's tcp provider
// on loopback, and byte patterns to check what arrives.
#ifndef CARAVAN_VAN_EFA_TEST_SUPPORT_H
#define CARAVAN_VAN_EFA_TEST_SUPPORT_H

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "caravan/plugin/van_v1.h"

namespace caravan::van_efa_test {

using Params = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;
inline constexpr auto kPatience = std::chrono::seconds(120);

inline const caravan_plugin_descriptor* Descriptor() {
  static const caravan_plugin_descriptor* desc = [] {
    void* handle = dlopen(CARAVAN_VAN_EFA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      ADD_FAILURE() << "dlopen: " << dlerror();
      return static_cast<const caravan_plugin_descriptor*>(nullptr);
    }
    auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(handle, CARAVAN_PLUGIN_ENTRY_SYMBOL));
    return entry ? entry() : nullptr;
  }();
  return desc;
}

inline const caravan_van_ops_v1& Ops() { return *static_cast<const caravan_van_ops_v1*>(Descriptor()->ops); }

struct FakeHost {
  caravan_host_v1 table{};
  Params params;
  Params env{{"FI_PROVIDER", "tcp"}};
  std::mutex mu;
  std::string last_error;
  std::vector<std::string> lines;

  explicit FakeHost(Params p) : params(std::move(p)) {
    table.struct_size = sizeof table;
    table.host_ctx = this;
    table.log = [](void* ctx, caravan_log_level level, const char* message) {
      std::fprintf(stderr, "[van-efa %d] %s\n", static_cast<int>(level), message);
      auto* self = static_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu);
      self->lines.push_back(message);
    };
    table.get_param = [](void* ctx, const char* name) -> const char* {
      auto* self = static_cast<FakeHost*>(ctx);
      auto it = self->params.find(name);
      return it == self->params.end() ? nullptr : it->second.c_str();
    };
    table.get_env = [](void* ctx, const char* name) -> const char* {
      auto* self = static_cast<FakeHost*>(ctx);
      auto it = self->env.find(name);
      return it == self->env.end() ? nullptr : it->second.c_str();
    };
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
  std::string find_line(const std::string& start) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& l : lines)
      if (l.compare(0, start.size(), start) == 0) return l;
    return "";
  }
};

struct Van {
  FakeHost host;
  void* ctx = nullptr;
  std::string addr;

  explicit Van(Params params = {}) : host(std::move(params)) {
    EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_OK) << host.error();
    if (ctx) {
      EXPECT_EQ(Listen(), CARAVAN_STATUS_OK) << host.error();
    }
  }
  ~Van() {
    if (ctx) Ops().finalize(ctx);
  }
  void Finalize() {
    EXPECT_EQ(Ops().finalize(ctx), CARAVAN_STATUS_OK);
    ctx = nullptr;
  }
  caravan_status Listen() {
    char buf[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
    caravan_status s = Ops().listen(ctx, "127.0.0.1", 0, buf, sizeof buf);
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
      EXPECT_NE(msg.peer, nullptr);
      check(msg);
      EXPECT_EQ(Ops().release(ctx, &msg), CARAVAN_STATUS_OK);
      return true;
    }
    ADD_FAILURE() << "no message within the deadline";
    return false;
  }
};

// a sends to b as peer 1; b to a as peer 2.
struct Pair {
  Van a, b;
  explicit Pair(Params params = {}) : a(params), b(params) {
    EXPECT_EQ(Ops().connect(a.ctx, 1, b.addr.c_str()), CARAVAN_STATUS_OK) << a.host.error();
    EXPECT_EQ(Ops().connect(b.ctx, 2, a.addr.c_str()), CARAVAN_STATUS_OK) << b.host.error();
  }
};

class DoneLog {
 public:
  explicit DoneLog(size_t n) : slots_(n) {
    for (auto& s : slots_) s.log = this;
  }
  void* cookie(size_t i) { return &slots_[i]; }
  static void Done(void* cookie, caravan_status status) {
    auto* slot = static_cast<Slot*>(cookie);
    slot->status.store(status);
    slot->calls.fetch_add(1);
    std::lock_guard<std::mutex> lock(slot->log->mu_);
    ++slot->log->total_;
    slot->log->cv_.notify_all();
  }
  bool WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, Clock::now() + kPatience, [&] { return total_ >= slots_.size(); });
  }
  int calls(size_t i) const { return slots_[i].calls.load(); }
  caravan_status status(size_t i) const { return slots_[i].status.load(); }

 private:
  struct Slot {
    DoneLog* log = nullptr;
    std::atomic<int> calls{0};
    std::atomic<caravan_status> status{1};
  };
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t total_ = 0;
};

inline std::vector<uint8_t> Pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131u + (i >> 9) + seed * 7u);
  return v;
}

inline caravan_segment_v1 Seg(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
inline caravan_segment_v1 Seg(const uint64_t& v) { return {&v, sizeof v}; }

inline uint64_t ReadU64(const caravan_recv_segment_v1& s) {
  uint64_t v = 0;
  EXPECT_EQ(s.len, sizeof v);
  if (s.len == sizeof v) std::memcpy(&v, s.data, sizeof v);
  return v;
}

inline void ExpectSame(const caravan_recv_segment_v1& got, const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.len, want.size());
  if (!want.empty()) {
    EXPECT_EQ(std::memcmp(got.data, want.data(), want.size()), 0);
  }
}

}  // namespace caravan::van_efa_test

#endif  // CARAVAN_VAN_EFA_TEST_SUPPORT_H
