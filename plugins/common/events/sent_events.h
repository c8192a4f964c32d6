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
#include <deque>
#include <mutex>

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
    size_t n = 0;
    for (; n < capacity && !queue_.empty(); ++n) {
      std::memset(&out[n], 0, sizeof out[n]);
      out[n].type = CARAVAN_VAN_EVENT_SENT;
      out[n].send_id = queue_.front().send_id;
      out[n].status = queue_.front().status;
      queue_.pop_front();
    }
    return n;
  }

 private:
  struct Sent {
    uint64_t send_id;
    caravan_status status;
  };
  std::mutex mu_;
  std::deque<Sent> queue_;
};

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGINS_COMMON_EVENTS_SENT_EVENTS_H
