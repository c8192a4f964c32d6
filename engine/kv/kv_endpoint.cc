#include "engine/kv/kv_endpoint.h"

#include <array>
#include <condition_variable>
#include <cstring>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/base/thread_name.h"

namespace caravan {
namespace {

constexpr int kPollMs = 100;

// A message that may be resent must own its bytes: the caller's memory is
// only promised until the first send is done.
void own(Blob& b) {
  if (b.keep || b.len == 0) return;
  auto copy = std::shared_ptr<char[]>(new char[b.len]);
  std::memcpy(copy.get(), b.data, b.len);
  b = Blob{copy.get(), b.len, copy};
}

}  // namespace

// A message on its way: the header bytes and everything the segments
// borrow, alive until the van is done with every send of it (a resend is
// another send of the same message).
struct KVEndpoint::Outgoing {
  uint8_t header[wire::kHeaderBytes];
  KVMessage msg;        // blobs empty for a header alone
  SentHandler on_sent;  // told how the first send ended

  caravan_segment_v2 segment(size_t i) const {
    switch (i) {
      case 0:
        return {header, wire::kHeaderBytes};
      case 1:
        return {msg.keys.data, msg.keys.len};
      case 2:
        return {msg.vals.data, msg.vals.len};
      default:
        return {msg.lens.data, msg.lens.len};
    }
  }
};

// One hand-over of a message to the van, with the seal made for it.
struct KVEndpoint::VanSend final : Van::Sending {
  explicit VanSend(std::shared_ptr<Outgoing> o, bool f) : out(std::move(o)), first(f) {}
  void sent(caravan_status status) override {
    if (!first || !out->on_sent) return;
    try {
      out->on_sent(status);
    } catch (const std::exception& e) {
      // Runs on the receiving thread, which must go on.
      CARAVAN_LOG(ERROR) << "kv: handling the end of a send failed: " << e.what();
    }
  }
  std::shared_ptr<Outgoing> out;
  MessageSeal::Seal seal;
  const bool first;
};

KVEndpoint::KVEndpoint(Van& van, int my_id, RequestHandler on_request)
    : van_(van), my_id_(my_id), on_request_(std::move(on_request)) {}

KVEndpoint::~KVEndpoint() { stop(); }

void KVEndpoint::set_seal(std::unique_ptr<MessageSeal> seal) {
  size_t most = van_.properties().max_segments;
  if (seal && most < 5)
    throw config_error(
        "CARAVAN_JOB_TOKEN adds a fifth segment (its seal) to every message, and van '" +
        van_.name() + "' carries at most " + std::to_string(most));
  seal_ = std::move(seal);
}

namespace {

// A message's slot for the van (van_v2.h, send): its first key plus one
// (0 means none), so a key's pushes to a server, and its answers to a
// worker, share one.
uint64_t slot_of_key(uint64_t key) { return key + 1; }

uint64_t slot_of(const caravan_segment_v2& keys) {
  uint64_t key;
  if (keys.len < sizeof key) return 0;
  std::memcpy(&key, keys.data, sizeof key);
  return slot_of_key(key);
}

// Where a message's values travel: segment 2, after its header and keys.
constexpr size_t kValsSegment = 2;

}  // namespace

bool KVEndpoint::lends() const {
  bool resends_or_drops = reliability_ && (reliability_->resend_on() || reliability_->drops());
  return !resends_or_drops && !seal_;
}

bool KVEndpoint::lend_values(uint64_t key, void* buf, size_t len) {
  if (!lends()) return false;
  return van_.lend(slot_of_key(key), kValsSegment, buf, len);
}

void KVEndpoint::unlend_values(uint64_t key) {
  if (!lends()) return;
  van_.unlend(slot_of_key(key));
}

void KVEndpoint::van_send(int recipient, const std::shared_ptr<Outgoing>& out, bool first) {
  auto send = std::make_shared<VanSend>(out, first);
  caravan_segment_v2 segments[5];
  size_t bytes = 0;
  for (size_t i = 0; i < 4; ++i) {
    segments[i] = out->segment(i);
    bytes += segments[i].len;
  }
  metrics::Registry& m = metrics::registry();
  m.messages_sent.add();
  m.bytes_sent.add(bytes);
  uint64_t slot = slot_of(segments[1]);
  if (!seal_) {
    van_.send(static_cast<uint64_t>(recipient), slot, segments, 4, std::move(send));
    return;
  }
  segments[4] = {send->seal.data(), send->seal.size()};
  // Held until the van has the message: seals to one peer must reach it in
  // the order they were made.
  auto in_order = seal_->seal(recipient, segments, &send->seal);
  van_.send(static_cast<uint64_t>(recipient), slot, segments, 5, std::move(send));
}

void KVEndpoint::start() {
  thread_ = std::thread([this] { loop(); });
}

void KVEndpoint::stop() {
  {
    // Closed to new requests first: until the receiving thread stops, the
    // handlers it runs (a finished send's) may try to send more (the next
    // partition a scheduling credit held back).
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_code_ == 0) {
      failed_code_ = CARAVAN_ERR_STATE;
      failure_ = "this node has stopped sending (it is leaving the job)";
    }
  }
  stop_ = true;
  if (thread_.joinable()) {
    van_.interrupt();
    thread_.join();
  }
}

KVMessage KVEndpoint::local_error(const wire::Header& request, int code, const std::string& why) {
  KVMessage m;
  m.head = request;
  m.head.flags &= ~wire::kRequest;
  m.head.status = code;
  auto text = std::make_shared<std::string>(why);
  m.vals.data = text->data();
  m.vals.len = text->size();
  m.vals.keep = text;
  return m;
}

void KVEndpoint::transmit(int recipient, KVMessage& msg, SentHandler on_sent) {
  bool resend = reliability_ && reliability_->resend_on();
  if (resend) {
    msg.head.flags |= wire::kWantAck;
    for (Blob* b : {&msg.keys, &msg.vals, &msg.lens}) own(*b);
  }
  auto out = std::make_shared<Outgoing>();
  msg.head.seg_len[0] = msg.keys.len;
  msg.head.seg_len[1] = msg.vals.len;
  msg.head.seg_len[2] = msg.lens.len;
  wire::encode(msg.head, out->header);
  out->msg = std::move(msg);
  out->on_sent = std::move(on_sent);
  CARAVAN_VLOG(2) << "kv: send to node " << recipient << " ts " << out->msg.head.timestamp
                  << " flags " << out->msg.head.flags << " vals " << out->msg.vals.len << " B";
  if (resend) {
    // Kept before the first send, so an acknowledgement can never arrive
    // before there is something to acknowledge.
    reliability_->keep(out->msg.head, [this, recipient, out] {
      try {
        van_send(recipient, out, false);
      } catch (const Error& e) {
        CARAVAN_LOG(DEBUG) << "kv: resending to node " << recipient << " failed: " << e.what();
      }
    });
  }
  try {
    van_send(recipient, out, true);
  } catch (...) {
    if (resend) reliability_->acknowledged(signature_of(out->msg.head));
    throw;
  }
}

void KVEndpoint::send_header(int recipient, const wire::Header& h, SentHandler on_sent) {
  auto out = std::make_shared<Outgoing>();
  wire::encode(h, out->header);
  out->on_sent = std::move(on_sent);
  van_send(recipient, out, true);
}

bool KVEndpoint::reliability_filter(const wire::Header& h, const std::string& peer) {
  if (!reliability_) return h.type == wire::Type::kKV;
  if (reliability_->drop()) {
    CARAVAN_VLOG(2) << "kv: PS_DROP_MSG dropped message " << h.timestamp << " from " << peer;
    return false;
  }
  if (h.type == wire::Type::kAck) {
    // The acknowledgement echoes the header of a message this node sent.
    if (h.sender == my_id_)
      reliability_->acknowledged(signature_of(h));
    else
      CARAVAN_LOG(WARNING) << "dropping an acknowledgement from " << peer << " for node "
                           << h.sender << ", this is node " << my_id_;
    return false;
  }
  if (h.flags & wire::kWantAck) {
    try {
      send_header(h.sender, ack_of(h), nullptr);
    } catch (const Error& e) {
      CARAVAN_LOG(DEBUG) << "kv: acknowledging message " << h.timestamp << " to node " << h.sender
                         << " failed: " << e.what();
    }
    if (!reliability_->first_delivery(h)) {
      CARAVAN_VLOG(2) << "kv: message " << h.timestamp << " from node " << h.sender
                      << " arrived again (resent); delivered once already";
      return false;
    }
  }
  if (!(h.flags & (wire::kRequest | wire::kRouted)))
    reliability_->acknowledged(request_signature_of(h));  // a response acknowledges its request
  return true;
}

void KVEndpoint::request(int recipient, KVMessage msg, ResponseHandler on_response,
                         SentHandler on_sent) {
  int32_t ts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_code_ != 0) throw Error(failed_code_, failure_);
    ts = next_timestamp_++;
    if (next_timestamp_ == INT32_MAX) next_timestamp_ = 1;
    pending_[ts] = Pending{recipient, std::move(on_response)};
  }
  msg.head.type = wire::Type::kKV;
  msg.head.flags |= wire::kRequest;
  msg.head.sender = my_id_;
  msg.head.recipient = recipient;
  msg.head.timestamp = ts;
  msg.head.customer_id = generation_;  // echoed in the response
  // A request the van failed to send is never answered (under PS_RESEND it
  // is sent again, and may be): its response is a local error, at once.
  bool resends = reliability_ && reliability_->resend_on();
  SentHandler sent = [this, ts, recipient, resends,
                      on_sent = std::move(on_sent)](caravan_status s) {
    if (on_sent) on_sent(s);
    if (s != CARAVAN_STATUS_OK && !resends)
      unanswerable(ts, recipient,
                   "the van could not send it to node " + std::to_string(recipient) + " (status " +
                       std::to_string(s) + ")");
  };
  try {
    transmit(recipient, msg, std::move(sent));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(ts);
    throw;
  }
}

void KVEndpoint::unanswerable(int32_t ts, int recipient, const std::string& why) {
  ResponseHandler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(ts);
    if (it == pending_.end() || it->second.recipient != recipient) return;
    handler = std::move(it->second.on_response);
    pending_.erase(it);
  }
  wire::Header h;
  h.timestamp = ts;
  h.recipient = recipient;
  handler(local_error(h, CARAVAN_ERR_TRANSPORT, why));
}

void KVEndpoint::send_routed(int recipient, KVMessage msg, SentHandler on_sent) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_code_ != 0) throw Error(failed_code_, failure_);
  }
  msg.head.type = wire::Type::kKV;
  msg.head.flags |= wire::kRouted;
  msg.head.sender = my_id_;
  msg.head.recipient = recipient;
  transmit(recipient, msg, std::move(on_sent));
}

void KVEndpoint::respond(const wire::Header& request_head, KVMessage msg, SentHandler on_sent) {
  wire::Header h = request_head;
  h.flags &= ~wire::kRequest;
  h.sender = my_id_;
  h.recipient = request_head.sender;
  h.status = msg.head.status;
  h.dtype = msg.head.dtype;
  msg.head = h;
  transmit(request_head.sender, msg, std::move(on_sent));
}

void KVEndpoint::fail_all(int code, const std::string& why) {
  std::unordered_map<int32_t, Pending> pending;
  std::shared_ptr<ProbeRound> round;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_code_ == 0) {
      failed_code_ = code;
      failure_ = why;
    }
    pending.swap(pending_);
    round = probe_;
  }
  if (round) probe_failed(*round);
  if (reliability_) reliability_->clear();
  for (auto& [ts, p] : pending) {
    wire::Header h;
    h.timestamp = ts;
    h.recipient = p.recipient;
    p.on_response(local_error(h, code, why));
  }
}

void KVEndpoint::deliver(std::unique_ptr<Van::Received> received) {
  std::shared_ptr<Van::Received> r(std::move(received));
  const std::string& peer = r->peer;
  {
    size_t bytes = 0;
    for (size_t i = 0; i < r->num_segments; ++i) bytes += r->segments[i].len;
    metrics::Registry& m = metrics::registry();
    m.messages_received.add();
    m.bytes_received.add(bytes);
  }
  auto drop = [&](const std::string& why) {
    CARAVAN_LOG(WARNING) << "dropping a malformed message from " << peer << ": " << why;
  };
  KVMessage m;
  std::string why;
  size_t num_segments = r->num_segments;
  if (seal_) {
    // First of all: what a stranger sends is looked at no further.
    if (!seal_->open(r->segments, num_segments, &why)) {
      CARAVAN_LOG(WARNING) << "kv: refused a message from " << peer << ": " << why;
      return;
    }
    num_segments = 4;
  }
  if (!decode_kv_message(r->segments, num_segments, my_id_, &m, &why)) return drop(why);
  // Before the reliability filter: PS_DROP_MSG is for data, and a probe
  // that was dropped would fail the start-up.
  if (m.head.type == wire::Type::kProbe) return on_probe(m.head, peer);
  for (Blob* b : {&m.keys, &m.vals, &m.lens}) b->keep = r;
  m.peer = peer;
  if (!reliability_filter(m.head, peer)) return;
  CARAVAN_VLOG(2) << "kv: recv from node " << m.head.sender << " ts " << m.head.timestamp
                  << " flags " << m.head.flags << " vals " << m.vals.len << " B";
  if (m.head.flags & wire::kRouted) {
    if (on_routed_) {
      on_routed_(std::move(m));
    } else {
      drop("a routed message, but this node runs no routed applications");
    }
    return;
  }
  if (m.head.customer_id != generation_) {
    CARAVAN_LOG(WARNING) << "kv: refused a message of the job's generation " << m.head.customer_id
                         << " from node " << m.head.sender << " (" << peer
                         << "): this node is in generation " << generation_
                         << " (CARAVAN_ELASTIC: a node left out of the job at a regroup)";
    return;
  }
  if (m.head.flags & wire::kRequest) {
    on_request_(std::move(m));
    return;
  }
  ResponseHandler handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(m.head.timestamp);
    if (it == pending_.end() && failed_code_ != 0) {
      // Its request was failed with the rest (a regroup, the job's end):
      // an answer still on its way then is no fault of the peer's.
      CARAVAN_VLOG(1) << "kv: dropping the answer from " << peer << " to request "
                      << m.head.timestamp << ", failed before it came (" << failure_ << ")";
      return;
    }
    if (it == pending_.end() || it->second.recipient != m.head.sender)
      return drop("a response to unknown request " + std::to_string(m.head.timestamp));
    handler = std::move(it->second.on_response);
    pending_.erase(it);
  }
  handler(std::move(m));
}

class KVEndpoint::Inbox final : public Van::Inbox {
 public:
  explicit Inbox(KVEndpoint& kv) : kv_(kv) {}
  void received(std::unique_ptr<Van::Received> message) override {
    try {
      kv_.deliver(std::move(message));
    } catch (const std::exception& e) {
      CARAVAN_LOG(ERROR) << "kv: handling a message failed: " << e.what();
    }
  }

 private:
  KVEndpoint& kv_;
};

void KVEndpoint::loop() {
  name_this_thread("cv-kv-recv");
  Inbox inbox(*this);
  while (!stop_) {
    try {
      van_.poll(kPollMs, inbox);
    } catch (const Error& e) {
      if (stop_) break;
      fail_all(CARAVAN_ERR_TRANSPORT, e.what());
      break;
    }
    if (reliability_) reliability_->tick();
  }
}

}  // namespace caravan
