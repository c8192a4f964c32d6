#include "van_instance.h"

#include "engine/van/van_v1_lift.h"

namespace caravan::van_check {

namespace {

// Events taken per poll() call.
constexpr size_t kEvents = 32;

Params with_defaults(const VanPlugin& plugin, Params params) {
  params.insert(plugin.params.begin(), plugin.params.end());  // keeps the test's own
  return params;
}

}  // namespace

VanInstance::VanInstance(const VanPlugin& plugin, Params params, std::optional<Params> env)
    : plugin_(plugin),
      host_(plugin.descriptor->name, with_defaults(plugin, std::move(params)), std::move(env)) {
  init_status_ = plugin.major == CARAVAN_VAN_ABI_MAJOR_V1
                     ? open_lifted_van_v1(plugin.ops_v1, host_.table(), &ctx_)
                     : ops().init(host_.table(), &ctx_);
  if (init_status_ != CARAVAN_STATUS_OK) {
    ctx_ = nullptr;
    return;
  }
  poller_ = std::thread([this] { poll_loop(); });
}

VanInstance::~VanInstance() {
  if (ok() && !finalized_) finalize();
}

void VanInstance::poll_loop() {
  caravan_van_event_v2 events[kEvents];
  while (!stop_) {
    size_t n = 0;
    caravan_status s = ops().poll(ctx_, 100, events, kEvents, &n);
    if (s == CARAVAN_STATUS_TIMEOUT) {
      EXPECT_EQ(n, 0u) << "poll returned TIMEOUT with events";
      continue;
    }
    if (s != CARAVAN_STATUS_OK) {
      std::lock_guard<std::mutex> lock(mu_);
      poll_end_ = s;
      arrived_.notify_all();
      return;
    }
    EXPECT_GE(n, 1u) << "poll returned OK without an event";
    EXPECT_LE(n, kEvents) << "poll wrote past the room it was given";
    for (size_t i = 0; i < n && i < kEvents; ++i) {
      const caravan_van_event_v2& e = events[i];
      if (e.type == CARAVAN_VAN_EVENT_SENT) {
        // 0: a send nobody asked after (send_unwatched).
        if (e.send_id) SendLog::complete(reinterpret_cast<SendLog::Slot*>(e.send_id), e.status);
      } else if (e.type == CARAVAN_VAN_EVENT_RECEIVED) {
        std::lock_guard<std::mutex> lock(mu_);
        inbox_.push_back(e.message);
        arrived_.notify_all();
      } else {
        ADD_FAILURE() << "poll returned an event of unknown type " << e.type;
      }
    }
  }
}

void VanInstance::stop_polling() {
  stop_ = true;
  ops().interrupt(ctx_);
  if (poller_.joinable()) poller_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (poll_end_ == CARAVAN_STATUS_OK) poll_end_ = CARAVAN_STATUS_CLOSED;
  arrived_.notify_all();
}

::testing::AssertionResult VanInstance::started() const {
  if (ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "init: " << status_name(init_status_) << ": " << host_.error();
}

caravan_status VanInstance::finalize() {
  // A van's finalize takes a live context exactly once.
  if (!ok() || finalized_) {
    ADD_FAILURE() << "finalize of an instance "
                  << (ok() ? "already finalized" : "whose init failed");
    return CARAVAN_STATUS_INVALID_ARGUMENT;
  }
  finalized_ = true;
  stop_polling();
  {
    // Messages received but never taken are the van's to free at finalize.
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.clear();
  }
  caravan_status s = ops().finalize(ctx_);
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << "finalize: " << host_.error();
  return s;
}

caravan_van_properties_v2 VanInstance::properties() {
  caravan_van_properties_v2 p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(properties(&p), CARAVAN_STATUS_OK) << host_.error();
  return p;
}

caravan_status VanInstance::properties(caravan_van_properties_v2* out) {
  return ops().properties(ctx_, out);
}

caravan_status VanInstance::listen(const char* host, int port) {
  char buf[CARAVAN_VAN_MAX_ADDRESS_V2] = {0};
  caravan_status s = ops().listen(ctx_, host, port, buf, sizeof buf);
  if (s == CARAVAN_STATUS_OK) addr_ = buf;
  return s;
}

caravan_status VanInstance::connect(uint64_t peer, const std::string& address) {
  return ops().connect(ctx_, peer, address.c_str());
}

caravan_status VanInstance::disconnect(uint64_t peer) { return ops().disconnect(ctx_, peer); }

caravan_status VanInstance::send(uint64_t peer, const std::vector<SendSegment>& segs,
                                 Ticket* ticket) {
  return send_with(peer, 0, segs, ticket);
}

caravan_status VanInstance::send_slot(uint64_t peer, uint64_t slot,
                                      const std::vector<SendSegment>& segs, Ticket* ticket) {
  return send_with(peer, slot, segs, ticket);
}

bool VanInstance::lends() const {
  return ops().struct_size >= sizeof(caravan_van_ops_v2) && ops().lend && ops().unlend;
}

caravan_status VanInstance::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  return ops().lend(ctx_, slot, segment, buf, len);
}

caravan_status VanInstance::unlend(uint64_t slot) { return ops().unlend(ctx_, slot); }

caravan_status VanInstance::send_with(uint64_t peer, uint64_t slot,
                                      const std::vector<SendSegment>& segs, Ticket* ticket) {
  std::vector<caravan_segment_v2> c_segs;
  for (const SendSegment& s : segs) c_segs.push_back({s.data, s.len});
  // The slot exists before the call: the polling thread may see the send
  // end before send returns.
  Ticket t = 0;
  SendLog::Slot* log_slot = sends_.open(&t);
  caravan_status s = ops().send(ctx_, peer, slot, c_segs.data(), c_segs.size(),
                                reinterpret_cast<uint64_t>(log_slot));
  if (s == CARAVAN_STATUS_OK) {
    sends_.accepted(log_slot);
    if (ticket) *ticket = t;
  }
  return s;
}

caravan_status VanInstance::send_unwatched(uint64_t peer, const std::vector<SendSegment>& segs) {
  std::vector<caravan_segment_v2> c_segs;
  for (const SendSegment& s : segs) c_segs.push_back({s.data, s.len});
  return ops().send(ctx_, peer, 0, c_segs.data(), c_segs.size(), 0);
}

bool VanInstance::wait_sent(Ticket t, Clock::duration patience) { return sends_.wait(t, patience); }
bool VanInstance::wait_all_sent(Clock::duration patience) { return sends_.wait_all(patience); }
int VanInstance::completions(Ticket t) { return sends_.completions(t); }
caravan_status VanInstance::sent_status(Ticket t) { return sends_.status(t); }
size_t VanInstance::accepted_sends() { return sends_.accepted_count(); }
size_t VanInstance::completed_sends() { return sends_.completion_count(); }

caravan_status VanInstance::recv(int timeout_ms, Message* out) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !inbox_.empty() || poll_end_ != CARAVAN_STATUS_OK; };
  if (timeout_ms < 0)
    arrived_.wait(lock, ready);
  else
    arrived_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  if (inbox_.empty()) return poll_end_ != CARAVAN_STATUS_OK ? poll_end_ : CARAVAN_STATUS_TIMEOUT;
  out->held_ = inbox_.front();
  inbox_.pop_front();
  out->peer = out->held_.peer;
  out->num_segments = out->held_.num_segments;
  out->segments.clear();
  for (size_t i = 0; i < out->num_segments && i < CARAVAN_VAN_MAX_SEGMENTS_V2; ++i)
    out->segments.push_back({out->held_.segments[i].data, out->held_.segments[i].len});
  return CARAVAN_STATUS_OK;
}

caravan_status VanInstance::wait_recv(Message* out, Clock::duration patience) {
  auto deadline = Clock::now() + patience;
  caravan_status s = CARAVAN_STATUS_TIMEOUT;
  while (s == CARAVAN_STATUS_TIMEOUT && Clock::now() < deadline) s = recv(200, out);
  return s;
}

caravan_status VanInstance::release(const Message& message) {
  return ops().release(ctx_, &message.held_);
}

bool VanInstance::recv_one(const std::function<void(const Message&)>& check,
                           Clock::duration patience) {
  Message m;
  caravan_status s = wait_recv(&m, patience);
  if (s == CARAVAN_STATUS_TIMEOUT) {
    ADD_FAILURE() << "no message within the deadline";
    return false;
  }
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << "recv: " << status_name(s) << ": " << host_.error();
  if (s != CARAVAN_STATUS_OK) return false;
  EXPECT_NE(m.peer, nullptr) << "a message's peer is never NULL";
  check(m);
  EXPECT_EQ(release(m), CARAVAN_STATUS_OK) << host_.error();
  return true;
}

// These call the plugin's own table: the lift is not the van under test.
caravan_status init_without_host(const VanPlugin& plugin) {
  return plugin.ops_v1 ? plugin.ops_v1->init(nullptr, nullptr)
                       : plugin.ops_v2->init(nullptr, nullptr);
}
caravan_status finalize_without_context(const VanPlugin& plugin) {
  return plugin.ops_v1 ? plugin.ops_v1->finalize(nullptr) : plugin.ops_v2->finalize(nullptr);
}
caravan_status properties_without_context(const VanPlugin& plugin) {
  if (plugin.ops_v1) {
    caravan_van_properties_v1 p{};
    p.struct_size = sizeof p;
    return plugin.ops_v1->properties(nullptr, &p);
  }
  caravan_van_properties_v2 p{};
  p.struct_size = sizeof p;
  return plugin.ops_v2->properties(nullptr, &p);
}

const char* status_name(caravan_status s) {
  switch (s) {
    case CARAVAN_STATUS_OK:
      return "OK";
    case CARAVAN_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case CARAVAN_STATUS_UNAVAILABLE:
      return "UNAVAILABLE";
    case CARAVAN_STATUS_NO_MEMORY:
      return "NO_MEMORY";
    case CARAVAN_STATUS_IO:
      return "IO";
    case CARAVAN_STATUS_TIMEOUT:
      return "TIMEOUT";
    case CARAVAN_STATUS_UNSUPPORTED:
      return "UNSUPPORTED";
    case CARAVAN_STATUS_CLOSED:
      return "CLOSED";
    case CARAVAN_STATUS_INTERNAL:
      return "INTERNAL";
  }
  return "unknown status";
}

}  // namespace caravan::van_check
