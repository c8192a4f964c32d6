#include "messages.h"

namespace caravan::van_zmq {

void SendRecord::release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (!cancelled_ && done_) {
    caravan_status status = status_.load(std::memory_order_relaxed);
    // Once the link is closed zmq may have discarded the frames instead of
    // writing them; it cannot tell us which, so claim nothing.
    if (status == CARAVAN_STATUS_OK && dropped_->load(std::memory_order_acquire))
      status = CARAVAN_STATUS_CLOSED;
    done_(cookie_, status);
  }
  delete this;
}

void SendRecord::free_frame(void* /*data*/, void* hint) {
  static_cast<SendRecord*>(hint)->release();
}

}  // namespace caravan::van_zmq
