// One instance of a van, driven through its C table the way the engine
// drives it: an ABI 2 table (an ABI 1 van through the engine's lift), sends
// from any thread, and one thread of the instance's own that polls, as the
// node's receiving thread does, and files what it gets: finished sends in
// the send log, messages in a queue that recv() takes from. This is the
// only code in the tests that calls a van's table.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conformance/host/fake_host.h"
#include "send_log.h"
#include "van_plugin.h"

namespace caravan::van_check {

using conformance::FakeHost;
using conformance::Params;
// Generous: a van is slow under sanitizers, but never this slow.
inline constexpr auto kPatience = std::chrono::seconds(120);

// Memory a send reads until the send has completed.
struct SendSegment {
  const void* data;
  size_t len;
};

// Memory a received message lends the test, writable until release.
struct RecvSegment {
  void* data;
  size_t len;
};

// A message the van delivered and the test holds until release().
struct Message {
  const char* peer = nullptr;  // the van's text for the sender; valid until release
  size_t num_segments = 0;
  std::vector<RecvSegment> segments;

 private:
  friend class VanInstance;
  caravan_van_message_v2 held_{};  // what the van wants back at release
};

class VanInstance {
 public:
  // Starts an instance with `params` as its parameters; `env` as in
  // FakeHost. init's result is in init_status(): a test of a refused init
  // constructs one and checks it.
  explicit VanInstance(const VanPlugin& plugin, Params params = {},
                       std::optional<Params> env = std::nullopt);
  // Finalizes, unless finalize() already ran.
  ~VanInstance();
  VanInstance(const VanInstance&) = delete;
  VanInstance& operator=(const VanInstance&) = delete;

  caravan_status init_status() const { return init_status_; }
  bool ok() const { return init_status_ == CARAVAN_STATUS_OK; }
  // Success when init returned OK; else its status and the van's reason.
  ::testing::AssertionResult started() const;
  const void* context() const { return ctx_; }  // for telling instances apart
  const FakeHost& host() const { return host_; }
  std::string error() const { return host_.error(); }
  const std::string& addr() const { return addr_; }

  caravan_van_properties_v2 properties();                     // a failure is a test failure
  caravan_status properties(caravan_van_properties_v2* out);  // as the van answers, unchecked
  caravan_status listen(const char* host = "127.0.0.1", int port = 0);
  caravan_status connect(uint64_t peer, const std::string& address);
  caravan_status disconnect(uint64_t peer);
  // Stops the polling thread (interrupt, then join), as the engine does,
  // then finalizes. Sends not reported by then are never reported.
  caravan_status finalize();

  // Sending. On OK the send has a ticket for the completion queries below;
  // a refused send has none and must never complete. An accepted send
  // completes exactly once: OK when its memory is no longer read, or the
  // reason it failed.
  caravan_status send(uint64_t peer, const std::vector<SendSegment>& segs,
                      Ticket* ticket = nullptr);
  caravan_status send_slot(uint64_t peer, uint64_t slot, const std::vector<SendSegment>& segs,
                           Ticket* ticket = nullptr);
  // A send whose completion nobody asks for (the engine's fire-and-forget
  // control messages): the van is told so, and its memory must outlive
  // the instance.
  caravan_status send_unwatched(uint64_t peer, const std::vector<SendSegment>& segs);

  // Receiving into lent memory (van_v2.h, minor 1): whether the van has
  // lend and unlend, and the calls themselves.
  bool lends() const;
  caravan_status lend(uint64_t slot, size_t segment, void* buf, size_t len);
  caravan_status unlend(uint64_t slot);

  // Completions of this instance's sends.
  bool wait_sent(Ticket t, Clock::duration patience = kPatience);
  bool wait_all_sent(Clock::duration patience = kPatience);  // every accepted send
  int completions(Ticket t);             // how often it completed: 0 while pending, then 1
  caravan_status sent_status(Ticket t);  // TIMEOUT while pending
  size_t accepted_sends();
  size_t completed_sends();  // completions so far, of any send

  // Receiving. recv() waits up to timeout_ms (-1: for ever) for the next
  // message the polling thread got; on OK it is held until release().
  // CLOSED, or the error that stopped the polling, once it stopped.
  // wait_recv() waits until a message or another status comes, or
  // `patience` passes (TIMEOUT). recv_one() waits, hands the message to
  // `check`, releases it, and fails the test when none came.
  caravan_status recv(int timeout_ms, Message* out);
  caravan_status wait_recv(Message* out, Clock::duration patience = kPatience);
  caravan_status release(const Message& message);
  bool recv_one(const std::function<void(const Message&)>& check,
                Clock::duration patience = kPatience);

 private:
  const caravan_van_ops_v2& ops() const { return *plugin_.driven; }
  caravan_status send_with(uint64_t peer, uint64_t slot, const std::vector<SendSegment>& segs,
                           Ticket* ticket);
  void poll_loop();
  void stop_polling();

  const VanPlugin& plugin_;
  FakeHost host_;
  SendLog sends_;  // outlives the van, which may complete sends up to finalize
  void* ctx_ = nullptr;
  caravan_status init_status_;
  std::atomic<bool> finalized_{false};
  std::string addr_;

  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<caravan_van_message_v2> inbox_;     // received, not yet taken by recv()
  caravan_status poll_end_ = CARAVAN_STATUS_OK;  // why the polling stopped, once it did
  std::atomic<bool> stop_{false};
  std::thread poller_;
};

// The van's calls with NULL where a context or host belongs, which a van
// must refuse with INVALID_ARGUMENT rather than crash on.
caravan_status init_without_host(const VanPlugin& plugin);
caravan_status finalize_without_context(const VanPlugin& plugin);
caravan_status properties_without_context(const VanPlugin& plugin);

const char* status_name(caravan_status s);

}  // namespace caravan::van_check
