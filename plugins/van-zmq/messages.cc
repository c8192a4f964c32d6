#include "messages.h"

#if defined(__SANITIZE_THREAD__)
#define CARAVAN_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CARAVAN_TSAN 1
#endif
#endif

#ifdef CARAVAN_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace caravan::van_zmq {

void SendRecord::handed_to_zmq() {
#ifdef CARAVAN_TSAN
  __tsan_release(this);
#endif
}

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
#ifdef CARAVAN_TSAN
  __tsan_acquire(hint);
#endif
  static_cast<SendRecord*>(hint)->release();
}

}  // namespace caravan::van_zmq
