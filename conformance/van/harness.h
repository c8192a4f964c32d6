// What every conformance test drives a van with: a fake host table, one
// instance of the van, done-callback bookkeeping and patterned payloads.
// Every wait loops on a deadline; nothing sleeps to synchronise.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "van_plugin.h"

namespace caravan::van_check {

using Clock = std::chrono::steady_clock;
using Params = std::map<std::string, std::string>;
// Generous: a van is slow under sanitizers, but never this slow.
constexpr auto kPatience = std::chrono::seconds(60);

inline const caravan_van_ops_v1& ops() { return *van().ops; }

// The van's set_error text when init() says UNAVAILABLE, else "".
std::string unavailable_reason();

class FakeHost {
 public:
  explicit FakeHost(Params params = {});
  const caravan_host_v1* table() const { return &table_; }
  std::string error();

 private:
  caravan_host_v1 table_{};
  Params params_;
  std::mutex mu_;
  std::string last_error_;
};

// One instance of the van under test; finalized on destruction.
class Instance {
 public:
  explicit Instance(Params params = {});
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  void* ctx() const { return ctx_; }
  bool ok() const { return ctx_ != nullptr; }
  const std::string& addr() const { return addr_; }
  std::string error() { return host_.error(); }
  caravan_van_properties_v1 properties();

  caravan_status listen(const char* host = "127.0.0.1", int port = 0);
  caravan_status connect(uint64_t peer, const std::string& address);
  caravan_status send(uint64_t peer, const std::vector<caravan_segment_v1>& segs,
                      caravan_send_done_fn done = nullptr, void* cookie = nullptr);
  // Loops on short recv() calls until one message arrives or the deadline
  // passes; hands it to `check` and releases it. False when none came.
  bool recv_one(const std::function<void(const caravan_van_message_v1&)>& check,
                Clock::duration patience = kPatience);
  caravan_status finalize();

 private:
  FakeHost host_;
  void* ctx_ = nullptr;
  std::string addr_;
};

// Counts done calls per send; cookie(i) is the cookie of send i.
class DoneLog {
 public:
  explicit DoneLog(size_t n);
  void* cookie(size_t i) { return &slots_[i]; }
  static void done(void* cookie, caravan_status status);
  bool wait_all(Clock::duration patience = kPatience) { return wait_for(slots_.size(), patience); }
  // Waits until at least `n` done calls have come in.
  bool wait_for(size_t n, Clock::duration patience = kPatience);
  size_t total();
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

std::vector<uint8_t> pattern(size_t n, unsigned seed);
inline caravan_segment_v1 seg(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }
inline caravan_segment_v1 seg(const uint64_t& v) { return {&v, sizeof v}; }
uint64_t read_u64(const caravan_recv_segment_v1& s);
void expect_same(const caravan_recv_segment_v1& got, const std::vector<uint8_t>& want);
const char* status_name(caravan_status s);

// Two instances in one process, each listening on 127.0.0.1 and connected
// to the other.
class VanPair : public ::testing::Test {
 protected:
  static constexpr uint64_t kA = 1, kB = 2;
  void SetUp() override;
  caravan_van_properties_v1 props_{};
  Instance a_, b_;
};

}  // namespace caravan::van_check
