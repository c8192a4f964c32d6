// The SENT events (van_v2.h) a van owes the engine: filled from whichever
// thread learns that a send is over, taken by poll(). The in-tree vans share
// it; how a van wakes its poller when the first event arrives is its own
// (an eventfd beside a zmq socket, a condition variable beside a completion
// queue), so push() only says whether waking is needed.
#ifndef CARAVAN_PLUGINS_COMMON_EVENTS_SENT_EVENTS_H
#define CARAVAN_PLUGINS_COMMON_EVENTS_SENT_EVENTS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "caravan/plugin/van_v2.h"

namespace caravan::plugin {

class SentEvents {
 public:
  // Queues one; true when the queue was empty, so a poller may be asleep
  // with nothing to wake it but the caller.
  bool push(uint64_t send_id, caravan_status status) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({send_id, status});
    return queue_.size() == 1;
  }

  // Moves up to `capacity` of the oldest events into `out`; their number.
  size_t take(caravan_van_event_v2* out, size_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = queue_.size() - taken_ < capacity ? queue_.size() - taken_ : capacity;
    for (size_t i = 0; i < n; ++i) {
      std::memset(&out[i], 0, sizeof out[i]);
      out[i].type = CARAVAN_VAN_EVENT_SENT;
      out[i].send_id = queue_[taken_ + i].send_id;
      out[i].status = queue_[taken_ + i].status;
    }
    taken_ += n;
    if (taken_ == queue_.size()) {
      queue_.clear();
      taken_ = 0;
    }
    return n;
  }

  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size() == taken_;
  }

 private:
  struct Sent {
    uint64_t send_id;
    caravan_status status;
  };
  mutable std::mutex mu_;
  std::vector<Sent> queue_;
  size_t taken_ = 0;  // the front of queue_ already handed out
};

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGINS_COMMON_EVENTS_SENT_EVENTS_H
