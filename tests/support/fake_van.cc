#include "tests/support/fake_van.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/base/error.h"

namespace caravan::test {

bool FakeNetwork::deliver(const std::string& address, Message m) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = vans_.find(address);
  if (it == vans_.end()) return false;
  it->second->arrive(std::move(m));
  return true;
}

// A received message: its bytes, or for a segment that took a lend, the
// engine's own buffer.
class FakeVan::Arrived final : public Van::Received {
 public:
  explicit Arrived(Message m) : message(std::move(m)) {
    num_segments = message.segments.size();
    for (size_t i = 0; i < num_segments; ++i)
      segments[i] = {message.segments[i].data(), message.segments[i].size()};
    peer = message.from;
  }
  Message message;
};

FakeVan::FakeVan(std::shared_ptr<FakeNetwork> network) : network_(std::move(network)) {
  props_.struct_size = sizeof props_;
  props_.caps = CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND;
  props_.max_message_bytes = size_t{1} << 32;
  props_.max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  props_.transport = "fake";
}

FakeVan::~FakeVan() {
  std::lock_guard<std::mutex> lock(network_->mu_);
  network_->vans_.erase(address_);
}

void FakeVan::hold_sent(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  holding_sent_ = hold;
}

void FakeVan::release_sent() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!held_sent_.empty()) {
    sent_.push_back(std::move(held_sent_.front()));
    held_sent_.pop_front();
  }
  cv_.notify_all();
}

void FakeVan::hold_deliveries(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  holding_deliveries_ = hold;
}

size_t FakeVan::deliver_held(bool newest_first) {
  std::deque<std::pair<std::string, Message>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(held_);
  }
  if (newest_first) std::reverse(held.begin(), held.end());
  for (auto& [to, m] : held) network_->deliver(to, std::move(m));
  return held.size();
}

void FakeVan::refuse_sends(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  refuse_ = n;
}

void FakeVan::fail_sends(int n, caravan_status status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_ = n;
  fail_status_ = status;
}

void FakeVan::drop_sends(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  drop_ = n;
}

size_t FakeVan::sends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sends_;
}

size_t FakeVan::deliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deliveries_;
}

size_t FakeVan::lent_deliveries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lent_deliveries_;
}

bool FakeVan::wait_for_deliveries(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return deliveries_ >= n; });
}

bool FakeVan::wait_for_held(size_t sent, size_t deliveries, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout,
                      [&] { return held_sent_.size() >= sent && held_.size() >= deliveries; });
}

std::string FakeVan::listen(const std::string&, int) {
  std::lock_guard<std::mutex> lock(network_->mu_);
  address_ = "fake://" + std::to_string(network_->next_++);
  network_->vans_[address_] = this;
  return address_;
}

void FakeVan::connect(uint64_t peer, const std::string& address) {
  std::lock_guard<std::mutex> lock(mu_);
  peers_[peer] = address;
}

void FakeVan::disconnect(uint64_t peer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!peers_.erase(peer))
    throw Error(CARAVAN_ERR_TRANSPORT, "fake van: no peer " + std::to_string(peer));
}

void FakeVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                   size_t num_segments, std::shared_ptr<Sending> sending) {
  Message m;
  std::string to;
  bool deliver = true, hold = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = peers_.find(peer);
    if (it == peers_.end())
      throw Error(CARAVAN_ERR_TRANSPORT, "fake van: send to unknown peer " + std::to_string(peer));
    if (refuse_ > 0) {
      --refuse_;
      throw Error(CARAVAN_ERR_TRANSPORT, "fake van: send refused by the test");
    }
    ++sends_;
    to = it->second;
    caravan_status status = CARAVAN_STATUS_OK;
    if (fail_ > 0) {
      --fail_;
      status = fail_status_;
      deliver = false;
    } else if (drop_ > 0) {
      --drop_;
      deliver = false;
    }
    if (deliver) {
      // The bytes as they are now: the engine may reuse its memory once
      // the SENT event is out, which may be before the peer reads them.
      m.from = address_;
      m.slot = slot;
      for (size_t i = 0; i < num_segments; ++i) {
        const char* p = static_cast<const char*>(segments[i].data);
        m.segments.emplace_back(p, p + segments[i].len);
      }
      hold = holding_deliveries_;
      if (hold) held_.emplace_back(to, std::move(m));
    }
    (holding_sent_ ? held_sent_ : sent_).push_back(Sent{std::move(sending), status});
    cv_.notify_all();
  }
  if (deliver && !hold) network_->deliver(to, std::move(m));
}

void FakeVan::arrive(Message message) {
  std::lock_guard<std::mutex> lock(mu_);
  inbox_.push_back(std::move(message));
  cv_.notify_all();
}

bool FakeVan::poll(int timeout_ms, Inbox& inbox) {
  std::deque<Sent> sent;
  std::vector<std::unique_ptr<Received>> arrived;
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return interrupted_ || !sent_.empty() || !inbox_.empty(); };
    if (timeout_ms < 0)
      cv_.wait(lock, ready);
    else
      cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
    interrupted_ = false;
    sent.swap(sent_);
    while (!inbox_.empty()) {
      auto a = std::make_unique<Arrived>(std::move(inbox_.front()));
      inbox_.pop_front();
      // A lend is taken here, under mu_, so unlend() (which takes mu_)
      // never returns while a message is being written into the buffer.
      auto lend = lends_.find(a->message.slot);
      if (lend != lends_.end() && lend->second.segment < a->num_segments &&
          a->segments[lend->second.segment].len == lend->second.len) {
        std::memcpy(lend->second.buf, a->segments[lend->second.segment].data, lend->second.len);
        a->segments[lend->second.segment].data = lend->second.buf;
        lends_.erase(lend);
        ++lent_deliveries_;
      }
      arrived.push_back(std::move(a));
    }
  }
  for (Sent& s : sent) s.sending->sent(s.status);
  for (auto& a : arrived) inbox.received(std::move(a));
  if (!arrived.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    deliveries_ += arrived.size();
    cv_.notify_all();
  }
  return !sent.empty() || !arrived.empty();
}

void FakeVan::interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_ = true;
  cv_.notify_all();
}

bool FakeVan::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  std::lock_guard<std::mutex> lock(mu_);
  lends_[slot] = Lend{segment, buf, len};
  return true;
}

void FakeVan::unlend(uint64_t slot) {
  std::lock_guard<std::mutex> lock(mu_);
  lends_.erase(slot);
}

}  // namespace caravan::test
