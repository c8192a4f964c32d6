#include "v1_van.h"

#include <chrono>

namespace skeleton {

using caravan::plugin::Error;

V1Van::V1Van(const caravan_host_v1* host)
    : host_(host),
      max_message_bytes_(static_cast<size_t>(host_.param_int("MAX_MESSAGE_BYTES", 1ll << 32))),
      links_(host_, max_message_bytes_, [this](std::unique_ptr<Frame> frame) {
        std::lock_guard<std::mutex> lock(mu_);
        inbox_.push_back(std::move(frame));
        cv_.notify_all();
      }) {}

// Every accepted send called its done before send() returned, so finalize
// has none left to call with CLOSED.
V1Van::~V1Van() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();  // a recv() waiting returns CLOSED
  }
  links_.close();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return calls_ == 0; });
  for (Frame* f : held_) delete f;
}

void V1Van::properties(caravan_van_properties_v1* out) const {
  if (!out || out->struct_size < sizeof *out)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "properties: struct_size too small");
  out->caps = 0;
  out->max_message_bytes = max_message_bytes_;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V1;
  out->transport = "tcp";
}

void V1Van::enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) throw Error(CARAVAN_STATUS_CLOSED, "the van is closing");
  ++calls_;
}

void V1Van::leave() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--calls_ == 0) cv_.notify_all();
}

void V1Van::send(uint64_t peer, const caravan_segment_v1* segments, size_t num_segments,
                 caravan_send_done_fn done, void* cookie) {
  caravan_segment_v2 same[kMaxSegments];  // the same memory, as the transport takes it
  for (size_t i = 0; segments && i < num_segments && i < kMaxSegments; ++i)
    same[i] = {segments[i].data, segments[i].len};
  enter();
  try {
    links_.write(peer, segments ? same : nullptr, num_segments);
  } catch (...) {
    leave();
    throw;
  }
  leave();
  // The frame is in the kernel: the caller's memory is no longer read. ABI 1
  // allows done() from inside send(), which is what the lift must absorb.
  if (done) done(cookie, CARAVAN_STATUS_OK);
}

caravan_status V1Van::recv(int timeout_ms, caravan_van_message_v1* out) {
  if (!out || out->struct_size < sizeof *out)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "recv: struct_size too small");
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_) return CARAVAN_STATUS_CLOSED;
  ++calls_;
  auto ready = [&] { return closing_ || !inbox_.empty(); };
  if (timeout_ms < 0)
    cv_.wait(lock, ready);
  else
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  caravan_status status = CARAVAN_STATUS_TIMEOUT;
  if (closing_) {
    status = CARAVAN_STATUS_CLOSED;
  } else if (!inbox_.empty()) {
    Frame* f = inbox_.front().release();
    inbox_.pop_front();
    held_.insert(f);
    out->num_segments = f->num_segments;
    for (size_t i = 0; i < f->num_segments; ++i) out->segments[i] = {f->segment(i), f->lengths[i]};
    out->peer = f->peer.c_str();
    out->van_token = f;
    status = CARAVAN_STATUS_OK;
  }
  if (--calls_ == 0) cv_.notify_all();
  return status;
}

void V1Van::release(caravan_van_message_v1* message) {
  auto* f = message ? static_cast<Frame*>(message->van_token) : nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (!f || !held_.erase(f))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: not a message this van handed out");
  delete f;
  message->van_token = nullptr;
}

}  // namespace skeleton
