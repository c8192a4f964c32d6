// The order in which a worker's pending partitions go out. The engine asks
// the SendPolicy for the next partition whenever it may send one more, and
// tells it when the van is done sending one, so a policy can bound how
// many are on the wire.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

namespace caravan {

struct PendingSend {
  int priority = 0;       // higher goes first where the policy cares
  uint64_t sequence = 0;  // submission order
  std::function<void()> start;
};

class SendPolicy {
 public:
  virtual ~SendPolicy() = default;
  virtual void add(PendingSend item) = 0;
  // The next partition to send now, or nothing when none is pending or the
  // policy holds the rest back. The caller sends what it gets.
  virtual std::optional<PendingSend> next() = 0;
  // A partition that next() handed out has left (the van is done with it,
  // or the send failed).
  virtual void finished() = 0;
};

// First in, first out: the order push_pull was called in, nothing held back.
std::unique_ptr<SendPolicy> make_fifo_send_policy();

// Highest priority first (then submission order), with at most `credit`
// partitions in flight (BYTEPS_SCHEDULING_CREDIT): a high-priority tensor
// submitted late overtakes the queued partitions of a low-priority one.
std::unique_ptr<SendPolicy> make_priority_send_policy(int credit);

// BYTEPS_SCHEDULING_CREDIT: 0 is FIFO, otherwise priority with that credit.
std::unique_ptr<SendPolicy> make_send_policy(int credit);

}  // namespace caravan
