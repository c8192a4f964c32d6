// A van in one process, for unit tests of the engine's data path: several
// FakeVan instances on one FakeNetwork reach each other by address, with
// the van contract of van_v2.h (segments kept, order per peer, one SENT
// event per accepted send, lends), and the test can hold back or break
// what a real van does only now and then:
//   - hold SENT events, so an answer arrives before its push is reported
//     sent (the van read the caller's memory until then);
//   - hold deliveries, to let them out later (a late answer) or in reverse
//     order (what several summation threads of one server produce);
//   - refuse sends (send() throws), fail them (SENT with an error), or drop
//     them (SENT OK, never delivered).
// Everything is driven by the engine's own polling thread; nothing here
// runs a thread of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/van/van.h"

namespace caravan::test {

class FakeVan;

// The addresses the vans of one test listen at.
class FakeNetwork {
 private:
  friend class FakeVan;
  struct Message {
    std::string from;
    uint64_t slot = 0;
    std::vector<std::vector<char>> segments;
  };
  // Hands `m` to the van listening at `address`; false when none is.
  bool deliver(const std::string& address, Message m);

  std::mutex mu_;  // held while delivering: a van leaves only between deliveries
  std::map<std::string, FakeVan*> vans_;
  int next_ = 1;
};

class FakeVan final : public Van {
 public:
  explicit FakeVan(std::shared_ptr<FakeNetwork> network);
  ~FakeVan() override;

  // ---- the test's controls (any thread) ----
  // Sends from now on are reported SENT only at release_sent().
  void hold_sent(bool hold);
  // Reports every held send (in the order they were sent).
  void release_sent();
  // Messages sent from now on wait here until deliver_held().
  void hold_deliveries(bool hold);
  // Lets the held messages go, oldest first or newest first; returns how
  // many went.
  size_t deliver_held(bool newest_first = false);
  // The next `n` sends throw from send() (no SENT event).
  void refuse_sends(int n);
  // The next `n` sends are accepted and reported SENT with `status`, and
  // never delivered.
  void fail_sends(int n, caravan_status status = CARAVAN_STATUS_IO);
  // The next `n` sends are reported SENT OK and never delivered.
  void drop_sends(int n);
  // Sends this van has accepted; messages it has handed to the engine (its
  // handler has returned), and of those, how many landed in lent memory.
  size_t sends() const;
  size_t deliveries() const;
  size_t lent_deliveries() const;
  // Waits until deliveries() reaches `n`; false after `timeout`.
  bool wait_for_deliveries(size_t n, std::chrono::milliseconds timeout);
  // Waits until at least `sent` SENT events and `deliveries` messages are
  // held back; false after `timeout`.
  bool wait_for_held(size_t sent, size_t deliveries, std::chrono::milliseconds timeout);

  // What listen() returned.
  const std::string& address() const { return address_; }

  // ---- Van ----
  const std::string& name() const override { return name_; }
  const caravan_van_properties_v2& properties() const override { return props_; }
  std::string listen(const std::string& host, int port) override;
  void connect(uint64_t peer, const std::string& address) override;
  void disconnect(uint64_t peer) override;
  void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments, size_t num_segments,
            std::shared_ptr<Sending> sending) override;
  bool poll(int timeout_ms, Inbox& inbox) override;
  void interrupt() override;
  bool lend(uint64_t slot, size_t segment, void* buf, size_t len) override;
  void unlend(uint64_t slot) override;

 private:
  friend class FakeNetwork;
  using Message = FakeNetwork::Message;
  struct Sent {
    std::shared_ptr<Sending> sending;
    caravan_status status;
  };
  struct Lend {
    size_t segment;
    void* buf;
    size_t len;
  };
  class Arrived;
  // Into this van's inbox (FakeNetwork::deliver).
  void arrive(Message message);

  std::shared_ptr<FakeNetwork> network_;
  std::string name_ = "fake";
  caravan_van_properties_v2 props_{};
  std::string address_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::string> peers_;  // node id -> address
  std::deque<Message> inbox_;
  std::deque<Sent> sent_;                             // SENT events for poll()
  std::deque<Sent> held_sent_;                        // waiting for release_sent()
  std::deque<std::pair<std::string, Message>> held_;  // to an address, at deliver_held()
  std::map<uint64_t, Lend> lends_;
  bool holding_sent_ = false;
  bool holding_deliveries_ = false;
  int refuse_ = 0;
  int fail_ = 0;
  caravan_status fail_status_ = CARAVAN_STATUS_IO;
  int drop_ = 0;
  bool interrupted_ = false;
  size_t sends_ = 0;
  size_t deliveries_ = 0;
  size_t lent_deliveries_ = 0;
};

}  // namespace caravan::test
