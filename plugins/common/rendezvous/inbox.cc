#include "rendezvous/inbox.h"

#include <chrono>
#include <cstring>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

using plugin::Error;

caravan_status Inbox::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                           size_t* n) {
  std::unique_lock<std::mutex> lock(mu_);
  ++in_poll_;
  auto ready = [&] { return closed_ || interrupted_ || !ready_.empty() || !sent_.empty(); };
  if (timeout_ms < 0)
    cv_.wait(lock, ready);
  else
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  --in_poll_;
  if (closed_) {
    cv_.notify_all();
    return CARAVAN_STATUS_CLOSED;
  }
  *n = 0;
  // Ends of sends first: the engine frees a send's credit before it
  // handles an answer that may have come with it.
  while (*n < capacity && !sent_.empty()) {
    events[(*n)++] = sent_.front();
    sent_.pop_front();
  }
  static char empty;
  while (*n < capacity && !ready_.empty()) {
    InMsg* m = ready_.front();
    ready_.pop_front();
    held_.insert(m);
    caravan_van_event_v2& e = events[(*n)++];
    std::memset(&e, 0, sizeof e);
    e.type = CARAVAN_VAN_EVENT_RECEIVED;
    e.message.num_segments = m->nseg;
    size_t off = 0;
    for (size_t i = 0; i < m->nseg; ++i) {
      e.message.segments[i].data = m->data ? m->data + off : &empty;
      e.message.segments[i].len = m->lens[i];
      off += m->lens[i];
    }
    e.message.peer = m->src->peer.c_str();
    e.message.van_token = m;
  }
  if (*n > 0) return CARAVAN_STATUS_OK;
  interrupted_ = false;
  return CARAVAN_STATUS_TIMEOUT;
}

void Inbox::add(std::vector<InMsg*>& msgs) {
  if (msgs.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.insert(ready_.end(), msgs.begin(), msgs.end());
  }
  msgs.clear();
  cv_.notify_all();
}

void Inbox::add_sent(std::vector<caravan_van_event_v2>& sent) {
  if (sent.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.insert(sent_.end(), sent.begin(), sent.end());
  }
  sent.clear();
  cv_.notify_all();
}

void Inbox::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

InMsg* Inbox::take_back(const caravan_van_message_v2* msg) {
  auto* m = static_cast<InMsg*>(msg->van_token);
  std::lock_guard<std::mutex> lock(mu_);
  if (!held_.erase(m))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: not a message this van handed out");
  return m;
}

void Inbox::close() {
  std::unique_lock<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return in_poll_ == 0; });
}

void Inbox::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (InMsg* m : ready_) delete m;
  ready_.clear();
  for (InMsg* m : held_) delete m;
  held_.clear();
}

}  // namespace caravan::rendezvous
