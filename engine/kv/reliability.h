// PS_RESEND: every data message a node sends with resend on carries
// wire::kWantAck and is kept until the receiver acknowledges it (or, for a
// request, until its response arrives); after PS_RESEND_TIMEOUT ms without
// either it is sent again. Receivers acknowledge every such message and
// deliver each one once, so a resent push is never summed twice.
//
// PS_DROP_MSG drops that percentage of received data messages and
// acknowledgements, to test the above on a healthy network.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <tuple>

#include "engine/wire/header.h"

namespace caravan {

// What identifies one data message between two nodes: the same message
// resent has the same signature, two different ones never do (a request
// id is unique per sender; a response echoes its request's id).
struct Signature {
  int32_t sender, recipient, app_id, customer_id, timestamp;
  uint32_t kind;  // the request/routed/simple flags
  bool operator<(const Signature& o) const {
    return std::tie(sender, recipient, app_id, customer_id, timestamp, kind) <
           std::tie(o.sender, o.recipient, o.app_id, o.customer_id, o.timestamp, o.kind);
  }
};
Signature signature_of(const wire::Header& h);
// The signature of the request a response answers.
Signature request_signature_of(const wire::Header& response);
// The acknowledgement of a received message: its header, echoed, no segments.
wire::Header ack_of(const wire::Header& h);

class Reliability {
 public:
  using Clock = std::chrono::steady_clock;
  // Sends the kept message again; runs without the lock held.
  using Resend = std::function<void()>;

  // resend_timeout_ms 0: resend off. drop_percent in [0, 100].
  Reliability(int resend_timeout_ms, int drop_percent);

  bool resend_on() const { return timeout_.count() > 0; }
  bool drops() const { return drop_percent_ > 0; }
  // Keeps a message sent with kWantAck until acknowledged.
  void keep(const wire::Header& h, Resend resend);
  // An acknowledgement, or a response (which acknowledges its request).
  void acknowledged(const Signature& s);
  // A received message with kWantAck: true the first time, false for a
  // copy already delivered (which is acknowledged again all the same).
  bool first_delivery(const wire::Header& h);
  // PS_DROP_MSG: whether to drop this received message.
  bool drop();
  // Resends what is overdue; call often (the KV loop does, every poll).
  void tick();
  // Forgets everything kept (shutdown or job failure).
  void clear();

 private:
  const std::chrono::milliseconds timeout_;
  const int drop_percent_;
  std::mutex mu_;
  struct Kept {
    Resend resend;
    Clock::time_point due;
    int attempts = 0;
  };
  std::map<Signature, Kept> kept_;
  // Delivered signatures, forgotten after a horizon far past any resend of
  // the same message, so the set stays bounded.
  std::map<Signature, Clock::time_point> seen_;
  Clock::time_point next_purge_;
  Clock::time_point next_scan_;
  std::mt19937 rng_;
};

}  // namespace caravan
