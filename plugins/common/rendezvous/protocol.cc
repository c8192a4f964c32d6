// The protocol's life cycle and the calls the van's callers make.
#include "rendezvous/protocol.h"

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

using plugin::Error;

Protocol::Protocol(Transport& t, Config cfg, LogFn log, std::string self_name)
    : t_(t),
      cfg_(cfg),
      log_(std::move(log)),
      memory_(t, cfg_, log_),
      posts_(t, log_),
      grants_(cfg_.cache_bytes),
      sender_(cfg_, log_, std::move(self_name), memory_, posts_, grants_, done_),
      receiver_(t, cfg_, log_, memory_, posts_, grants_, inbox_) {}

Protocol::~Protocol() { free(); }

void Protocol::connect(uint64_t peer, uint64_t addr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sender_.connect(peer, addr);
  }
  t_.wake();
}

void Protocol::disconnect(uint64_t peer) {
  locked([&] { sender_.disconnect(peer); }, true);
}

void Protocol::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segs, size_t n,
                    uint64_t send_id) {
  Sender::Outgoing out = sender_.outgoing(slot, segs, n, SendTicket{send_id, true});
  bool may_wait = false;
  if (out.large) {
    std::lock_guard<std::mutex> lock(mu_);
    may_wait = sender_.may_wait();
  }
  // Copies and registrations happen outside the lock so senders on several
  // threads overlap.
  sender_.stage(out, may_wait);
  locked([&] { sender_.enqueue(peer, out); }, true);
}

void Protocol::release(const caravan_van_message_v2* msg) {
  if (!msg) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: message is NULL");
  InMsg* m = inbox_.take_back(msg);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake = receiver_.released(m);
  }
  delete m;
  if (wake) t_.wake();
}

void Protocol::close() {
  inbox_.close();
  locked([&] {
    closing_ = true;
    grants_.close();
    sender_.close();
  });
}

void Protocol::settle_transfers(caravan_status status) {
  locked([&] { sender_.settle_transfers(status); });
}

void Protocol::free() {
  settle_transfers(CARAVAN_STATUS_CLOSED);
  std::lock_guard<std::mutex> lock(mu_);
  posts_.clear();
  sender_.clear();
  inbox_.clear();
  receiver_.clear();
  grants_.clear();
  memory_.clear();
}

PoolStats Protocol::stats() { return memory_.stats(); }

Counts Protocol::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.by_request = sender_.by_request();
  c.by_write = sender_.by_write();
  c.lent = grants_.lent();
  c.lent_bytes = grants_.lent_bytes();
  return c;
}

}  // namespace caravan::rendezvous
