#include "skeleton_van.h"

#include <chrono>
#include <cstring>

namespace skeleton {

using caravan::plugin::Error;

// A send() or poll() inside the van: finalize may run meanwhile on another
// thread (van_v2.h), and it must not free what the call still uses, so it
// waits until every counted call has left. Refused once finalize began.
class SkeletonVan::Call {
 public:
  explicit Call(SkeletonVan& van) : van_(van) {
    std::lock_guard<std::mutex> lock(van_.mu_);
    if (van_.closing_) throw Error(CARAVAN_STATUS_CLOSED, "the van is closing");
    ++van_.calls_;
  }
  ~Call() {
    std::lock_guard<std::mutex> lock(van_.mu_);
    if (--van_.calls_ == 0) van_.idle_.notify_all();
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

 private:
  SkeletonVan& van_;
};

SkeletonVan::SkeletonVan(const caravan_host_v1* host)
    : host_(host),
      max_message_bytes_(static_cast<size_t>(kMaxMessageBytes.integer(host_))),
      links_(host_, max_message_bytes_,
             [this](std::unique_ptr<Frame> frame) { arrived(std::move(frame)); }) {}

// finalize. Sends whose SENT event was never polled are simply over: the
// ABI has finalize report nothing, so their events go with the van.
SkeletonVan::~SkeletonVan() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    events_.notify_all();  // a poll() waiting returns CLOSED
  }
  links_.close();  // a send() writing gives up, and nothing arrives any more
  std::unique_lock<std::mutex> lock(mu_);
  idle_.wait(lock, [&] { return calls_ == 0; });
  for (Frame* f : held_) delete f;  // messages not released are invalid now
}

void SkeletonVan::properties(caravan_van_properties_v2* out) const {
  out->caps = 0;
  out->max_message_bytes = max_message_bytes_;
  out->max_segments = kMaxSegments;
  out->transport = "tcp";
}

void SkeletonVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  links_.listen(host, port, addr_out, addr_cap);
}

void SkeletonVan::connect(uint64_t peer, const char* address) { links_.connect(peer, address); }

// Every send to `peer` that was accepted has been written and its SENT
// event queued already (send() writes before it returns), so none is left
// to report CLOSED; one still writing fails and returns CLOSED itself.
void SkeletonVan::disconnect(uint64_t peer) { links_.disconnect(peer); }

void SkeletonVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                       size_t num_segments, uint64_t send_id) {
  (void)slot;  // one stream per peer carries every slot: nothing is kept per slot
  Call call(*this);
  links_.write(peer, segments, num_segments);
  // The frame is in the kernel, so the caller's memory is free again; the
  // engine hears so from poll(), never from inside send().
  std::lock_guard<std::mutex> lock(mu_);
  sent_.emplace_back(send_id, CARAVAN_STATUS_OK);
  events_.notify_all();
}

caravan_status SkeletonVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                                 size_t* num_events) {
  Call call(*this);
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return closing_ || interrupted_ || !sent_.empty() || !inbox_.empty(); };
  if (timeout_ms < 0)
    events_.wait(lock, ready);
  else
    events_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  if (closing_) return CARAVAN_STATUS_CLOSED;
  interrupted_ = false;  // this call is the one interrupt() woke
  // Ends of sends first: the engine frees a send's credit on its SENT event
  // before it handles the answer that may have come in the same call.
  size_t n = 0;
  for (; n < capacity && !sent_.empty(); ++n) {
    caravan_van_event_v2& e = events[n];
    std::memset(&e, 0, sizeof e);
    e.type = CARAVAN_VAN_EVENT_SENT;
    e.send_id = sent_.front().first;
    e.status = sent_.front().second;
    sent_.pop_front();
  }
  for (; n < capacity && !inbox_.empty(); ++n) {
    Frame* f = inbox_.front().release();
    inbox_.pop_front();
    held_.insert(f);
    caravan_van_event_v2& e = events[n];
    std::memset(&e, 0, sizeof e);
    e.type = CARAVAN_VAN_EVENT_RECEIVED;
    e.message.num_segments = f->num_segments;
    for (size_t i = 0; i < f->num_segments; ++i)
      e.message.segments[i] = {f->segment(i), f->lengths[i]};
    e.message.peer = f->peer.c_str();
    e.message.van_token = f;
  }
  *num_events = n;
  return n > 0 ? CARAVAN_STATUS_OK : CARAVAN_STATUS_TIMEOUT;
}

void SkeletonVan::release(const caravan_van_message_v2* message) {
  auto* f = message ? static_cast<Frame*>(message->van_token) : nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!f || !held_.erase(f))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: not a message this van handed out");
  delete f;
}

void SkeletonVan::interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  events_.notify_all();
}

void SkeletonVan::arrived(std::unique_ptr<Frame> frame) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(std::move(frame));
  events_.notify_all();
}

}  // namespace skeleton
