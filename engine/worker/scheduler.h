// The order in which a worker's pending partitions go out. The engine asks
// the Scheduler for the next partition whenever it may send one more.
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

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual void add(PendingSend item) = 0;
  // The next partition to send, or nothing when none is pending.
  virtual std::optional<PendingSend> next() = 0;
};

// First in, first out: the order push_pull was called in.
std::unique_ptr<Scheduler> make_fifo_scheduler();

}  // namespace caravan
