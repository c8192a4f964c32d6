#include "van_instance.h"

namespace caravan::van_check {

namespace {

void on_send_done(void* cookie, caravan_status status) {
  SendLog::complete(static_cast<SendLog::Slot*>(cookie), status);
}

}  // namespace

VanInstance::VanInstance(const VanPlugin& plugin, Params params, std::optional<Params> env)
    : plugin_(plugin), host_(plugin.descriptor->name, std::move(params), std::move(env)) {
  init_status_ = ops().init(host_.table(), &ctx_);
  if (init_status_ != CARAVAN_STATUS_OK) ctx_ = nullptr;
}

VanInstance::~VanInstance() {
  if (ok() && !finalized_) finalize();
}

::testing::AssertionResult VanInstance::started() const {
  if (ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "init: " << status_name(init_status_) << ": " << host_.error();
}

caravan_status VanInstance::finalize() {
  // A van's finalize takes a live context exactly once.
  if (!ok() || finalized_) {
    ADD_FAILURE() << "finalize of an instance " << (ok() ? "already finalized" : "whose init failed");
    return CARAVAN_STATUS_INVALID_ARGUMENT;
  }
  finalized_ = true;
  caravan_status s = ops().finalize(ctx_);
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << "finalize: " << host_.error();
  return s;
}

caravan_van_properties_v1 VanInstance::properties() {
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(properties(&p), CARAVAN_STATUS_OK) << host_.error();
  return p;
}

caravan_status VanInstance::properties(caravan_van_properties_v1* out) { return ops().properties(ctx_, out); }

caravan_status VanInstance::listen(const char* host, int port) {
  char buf[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
  caravan_status s = ops().listen(ctx_, host, port, buf, sizeof buf);
  if (s == CARAVAN_STATUS_OK) addr_ = buf;
  return s;
}

caravan_status VanInstance::connect(uint64_t peer, const std::string& address) {
  return ops().connect(ctx_, peer, address.c_str());
}

caravan_status VanInstance::disconnect(uint64_t peer) { return ops().disconnect(ctx_, peer); }

caravan_status VanInstance::send(uint64_t peer, const std::vector<SendSegment>& segs, Ticket* ticket) {
  return send_with(peer, std::nullopt, segs, ticket);
}

caravan_status VanInstance::send_slot(uint64_t peer, uint64_t slot, const std::vector<SendSegment>& segs,
                                      Ticket* ticket) {
  return send_with(peer, slot, segs, ticket);
}

caravan_status VanInstance::send_with(uint64_t peer, std::optional<uint64_t> slot,
                                      const std::vector<SendSegment>& segs, Ticket* ticket) {
  std::vector<caravan_segment_v1> c_segs;
  for (const SendSegment& s : segs) c_segs.push_back({s.data, s.len});
  // The slot exists before the call: a van may complete before send returns.
  Ticket t = 0;
  SendLog::Slot* cookie = sends_.open(&t);
  caravan_status s;
  if (slot) {
    // send_slot came with ABI 1.1; a 1.0 table ends before it.
    if (ops().struct_size <= offsetof(caravan_van_ops_v1, send_slot) || !ops().send_slot)
      return CARAVAN_STATUS_UNSUPPORTED;
    s = ops().send_slot(ctx_, peer, *slot, c_segs.data(), c_segs.size(), on_send_done, cookie);
  } else {
    s = ops().send(ctx_, peer, c_segs.data(), c_segs.size(), on_send_done, cookie);
  }
  if (s == CARAVAN_STATUS_OK) {
    sends_.accepted(cookie);
    if (ticket) *ticket = t;
  }
  return s;
}

caravan_status VanInstance::send_unwatched(uint64_t peer, const std::vector<SendSegment>& segs) {
  std::vector<caravan_segment_v1> c_segs;
  for (const SendSegment& s : segs) c_segs.push_back({s.data, s.len});
  return ops().send(ctx_, peer, c_segs.data(), c_segs.size(), nullptr, nullptr);
}

bool VanInstance::wait_sent(Ticket t, Clock::duration patience) { return sends_.wait(t, patience); }
bool VanInstance::wait_all_sent(Clock::duration patience) { return sends_.wait_all(patience); }
int VanInstance::completions(Ticket t) { return sends_.completions(t); }
caravan_status VanInstance::sent_status(Ticket t) { return sends_.status(t); }
size_t VanInstance::accepted_sends() { return sends_.accepted_count(); }
size_t VanInstance::completed_sends() { return sends_.completion_count(); }

caravan_status VanInstance::recv(int timeout_ms, Message* out) {
  out->held_ = {};
  out->held_.struct_size = sizeof out->held_;
  caravan_status s = ops().recv(ctx_, timeout_ms, &out->held_);
  if (s != CARAVAN_STATUS_OK) return s;
  out->peer = out->held_.peer;
  out->num_segments = out->held_.num_segments;
  out->segments.clear();
  for (size_t i = 0; i < out->num_segments && i < CARAVAN_VAN_MAX_SEGMENTS_V1; ++i)
    out->segments.push_back({out->held_.segments[i].data, out->held_.segments[i].len});
  return s;
}

caravan_status VanInstance::wait_recv(Message* out, Clock::duration patience) {
  auto deadline = Clock::now() + patience;
  caravan_status s = CARAVAN_STATUS_TIMEOUT;
  while (s == CARAVAN_STATUS_TIMEOUT && Clock::now() < deadline) s = recv(200, out);
  return s;
}

caravan_status VanInstance::release(const Message& message) {
  caravan_van_message_v1 held = message.held_;
  return ops().release(ctx_, &held);
}

bool VanInstance::recv_one(const std::function<void(const Message&)>& check, Clock::duration patience) {
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

caravan_status init_without_host(const VanPlugin& plugin) { return plugin.ops->init(nullptr, nullptr); }
caravan_status finalize_without_context(const VanPlugin& plugin) { return plugin.ops->finalize(nullptr); }
caravan_status properties_without_context(const VanPlugin& plugin) {
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  return plugin.ops->properties(nullptr, &p);
}

const char* status_name(caravan_status s) {
  switch (s) {
    case CARAVAN_STATUS_OK: return "OK";
    case CARAVAN_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case CARAVAN_STATUS_UNAVAILABLE: return "UNAVAILABLE";
    case CARAVAN_STATUS_NO_MEMORY: return "NO_MEMORY";
    case CARAVAN_STATUS_IO: return "IO";
    case CARAVAN_STATUS_TIMEOUT: return "TIMEOUT";
    case CARAVAN_STATUS_UNSUPPORTED: return "UNSUPPORTED";
    case CARAVAN_STATUS_CLOSED: return "CLOSED";
    case CARAVAN_STATUS_INTERNAL: return "INTERNAL";
  }
  return "unknown status";
}

}  // namespace caravan::van_check
