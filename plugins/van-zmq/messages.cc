#include "messages.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"
#include "events/tsan.h"

namespace caravan::van_zmq {

Completions::Completions() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0)
    throw plugin::Error(CARAVAN_STATUS_UNAVAILABLE,
                        std::string("eventfd for the van's wake-ups: ") + std::strerror(errno));
}

Completions::~Completions() { close(fd_); }

void Completions::wake() {
  uint64_t one = 1;
  // Fails only when the counter is already huge: readable either way.
  while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Completions::drain() {
  uint64_t count;
  while (read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
  }
}

void SendRecord::handed_to_zmq() {
#ifdef CARAVAN_TSAN
  __tsan_release(this);
#endif
}

void SendRecord::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!cancelled_) {
    caravan_status status = status_.load(std::memory_order_relaxed);
    // Once the link is closed zmq may have discarded the frames instead of
    // writing them; it cannot tell us which, so claim nothing.
    if (status == CARAVAN_STATUS_OK && dropped_->load(std::memory_order_acquire))
      status = CARAVAN_STATUS_CLOSED;
    completions_.sent(send_id_, status);
  }
  delete this;
}

void SendRecord::free_frame(void* /*data*/, void* hint) {
#ifdef CARAVAN_TSAN
  __tsan_acquire(hint);
#endif
  static_cast<SendRecord*>(hint)->release();
}

}  // namespace caravan::van_zmq
