// A 32-bit counter in shared memory that processes sleep on until someone
// rings it. Every change of a local group's state rings the one doorbell,
// so a waiter re-reads the state it cares about after each ring.
//
// Built on a shared futex rather than a process-shared pthread condition:
// a process killed inside pthread_cond_wait leaves the condition's internal
// counts behind and can block the next pthread_cond_broadcast forever,
// whereas a futex word has no state a dead process can corrupt.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace caravan {

using SteadyClock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux

static_assert(std::atomic<uint32_t>::is_always_lock_free &&
                  std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free to work across processes");

class Doorbell {
 public:
  explicit Doorbell(std::atomic<uint32_t>* word) : word_(word) {}

  // The value to hand to sleep_until(): read it before checking the state.
  uint32_t ticket() const { return word_->load(std::memory_order_acquire); }

  // Sleeps until the doorbell rang after `ticket` was read, or `deadline`
  // (CLOCK_MONOTONIC). Spurious returns are allowed; callers re-check.
  void sleep_until(uint32_t ticket, SteadyClock::time_point deadline) const;

  // Wakes every sleeper in every process.
  void ring() const;

 private:
  std::atomic<uint32_t>* word_;
};

}  // namespace caravan
