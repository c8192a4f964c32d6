#include "engine/local/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace caravan {

void Doorbell::sleep_until(uint32_t ticket, SteadyClock::time_point deadline) const {
  auto since_epoch = deadline.time_since_epoch();
  if (since_epoch.count() <= 0) return;
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec abs{};
  abs.tv_sec = static_cast<time_t>(secs.count());
  abs.tv_nsec = static_cast<long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - secs).count());
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a
  // wake-up that comes early and sleeps again does not stretch the wait.
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word_), FUTEX_WAIT_BITSET, ticket, &abs, nullptr,
          FUTEX_BITSET_MATCH_ANY);
  // EAGAIN (it already rang), ETIMEDOUT and EINTR all mean: look again.
}

void Doorbell::ring() const {
  word_->fetch_add(1, std::memory_order_acq_rel);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word_), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace caravan
