#include "rendezvous/inbox.h"

#include <chrono>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

using plugin::Error;

caravan_status Inbox::recv(int timeout_ms, caravan_van_message_v1* out) {
  if (!out || out->struct_size < sizeof(caravan_van_message_v1))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "recv: message struct missing or too small");
  std::unique_lock<std::mutex> lock(mu_);
  ++in_recv_;
  auto ready = [&] { return closed_ || !ready_.empty(); };
  if (timeout_ms < 0)
    cv_.wait(lock, ready);
  else
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  --in_recv_;
  if (closed_) {
    cv_.notify_all();
    return CARAVAN_STATUS_CLOSED;
  }
  if (ready_.empty()) return CARAVAN_STATUS_TIMEOUT;
  InMsg* m = ready_.front();
  ready_.pop_front();
  held_.insert(m);
  static char empty;
  out->num_segments = m->nseg;
  size_t off = 0;
  for (size_t i = 0; i < m->nseg; ++i) {
    out->segments[i].data = m->data ? m->data + off : &empty;
    out->segments[i].len = m->lens[i];
    off += m->lens[i];
  }
  out->peer = m->src->peer.c_str();
  out->van_token = m;
  return CARAVAN_STATUS_OK;
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

InMsg* Inbox::take_back(const caravan_van_message_v1* msg) {
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
  cv_.wait(lock, [&] { return in_recv_ == 0; });
}

void Inbox::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (InMsg* m : ready_) delete m;
  ready_.clear();
  for (InMsg* m : held_) delete m;
  held_.clear();
}

}  // namespace caravan::rendezvous
