#include "inbox.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace caravan::van_ucx {
namespace {

constexpr size_t kAlign = 64;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

unsigned char* allocate(size_t bytes) {
  return static_cast<unsigned char*>(std::aligned_alloc(kAlign, round_up(bytes ? bytes : 1)));
}

// A segment at least this large that UCX has put together from eager
// fragments stays in UCX's buffer: copying 4 MB out cost as much as its
// transfer on loopback. Smaller ones are copied, so that messages the engine
// holds long (a round's pushes) do not hold UCX's receive buffers.
constexpr size_t kKeepBytes = 256 * 1024;

// How long unlend waits for a receive into the lent memory before it
// cancels it: UCX finds a dead peer well before (its keepalive).
constexpr auto kTakeBackWait = std::chrono::seconds(30);

}  // namespace

Incoming::~Incoming() {
  if (kept) ucp_am_data_release(worker, kept);
  std::free(memory);
  std::free(moved);
}

Inbox::Inbox(const plugin::Host& host, ucp_worker_h worker) : host_(host), worker_(worker) {}

Inbox::~Inbox() = default;

void Inbox::shutdown(std::chrono::milliseconds wait) {
  std::vector<Incoming*> in_flight;
  for (auto& [id, stream] : streams_)
    for (auto& [seq, in] : stream.waiting)
      if (in->request) {
        ucp_request_cancel(worker_, in->request);
        in_flight.push_back(in.get());
      }
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto busy = [&] {
    for (Incoming* in : in_flight)
      if (in->request) return true;
    return false;
  };
  while (busy() && std::chrono::steady_clock::now() < deadline) ucp_worker_progress(worker_);
  if (busy())
    host_.log(CARAVAN_LOG_WARNING, "closing: receives UCX did not cancel within " +
                                       std::to_string(wait.count()) + " ms are left");
  closed_ = true;
  // The records stay (a receive UCX did not cancel still points at its
  // own), their UCX buffers go back while the worker is there.
  auto give_back = [&](Incoming& in) {
    if (in.kept) ucp_am_data_release(worker_, in.kept);
    in.kept = nullptr;
  };
  for (auto& [id, stream] : streams_)
    for (auto& [seq, in] : stream.waiting) give_back(*in);
  for (auto& in : ready_) give_back(*in);
}

bool Inbox::check(const WireHead& head, uint64_t offset, size_t header_length, size_t length,
                  std::string* why) const {
  if (head.magic != kWireMagic) return *why = "not a Caravan ucx van message (wrong magic)", false;
  if (head.kind != Kind::kHello && head.kind != Kind::kData && head.kind != Kind::kPiece)
    return *why = "unknown kind " + std::to_string(static_cast<uint32_t>(head.kind)), false;
  if (head.num_segments > CARAVAN_VAN_MAX_SEGMENTS_V2)
    return *why = std::to_string(head.num_segments) + " segments", false;
  if (head.kind == Kind::kHello) {
    if (head.num_segments != 0 || head.data_segment != kEverySegment)
      return *why = "a HELLO with segments", false;
    if (header_length != wire_head_bytes(0))
      return *why = "a HELLO header of " + std::to_string(header_length) + " bytes", false;
    return true;  // its data is the sender's name
  }
  if (head.num_segments == 0) return *why = "a message of no segments", false;
  const bool every = head.data_segment == kEverySegment;
  if (!every && head.data_segment >= head.num_segments)
    return *why = "data segment " + std::to_string(head.data_segment) + " of " +
                  std::to_string(head.num_segments),
           false;
  uint64_t total = 0;
  for (size_t i = 0; i < head.num_segments; ++i) {
    if (head.lens[i] > UINT64_MAX - total) return *why = "segment lengths overflow", false;
    total += head.lens[i];
  }
  uint64_t in_data = every ? total : head.lens[head.data_segment];
  uint64_t in_header = wire_head_bytes(head.num_segments) + (total - in_data);
  if (head.kind == Kind::kPiece) {
    if (every) return *why = "a piece of no data segment", false;
    if (length == 0 || offset > in_data || length > in_data - offset)
      return *why = "a piece of " + std::to_string(length) + " bytes at " + std::to_string(offset) +
                    " of " + std::to_string(in_data),
             false;
    // Only the first piece carries the small segments.
    in_data = length;
    in_header = offset ? piece_head_bytes(head.num_segments) : in_header + sizeof offset;
  }
  if (in_data != length || in_header != header_length)
    return *why = "segments of " + std::to_string(total) + " bytes in a header of " +
                  std::to_string(header_length) + " and data of " + std::to_string(length) +
                  " bytes",
           false;
  return true;
}

ucs_status_t Inbox::arrived(const void* header, size_t header_length, void* data, size_t length,
                            const ucp_am_recv_param_t* param) {
  const bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  WireHead head{};
  uint64_t offset = 0;  // a piece's
  std::string why;
  if (header_length < offsetof(WireHead, lens)) {
    why = "header of " + std::to_string(header_length) + " bytes";
  } else {
    std::memcpy(&head, header, offsetof(WireHead, lens));
    size_t n = std::min<size_t>(head.num_segments, CARAVAN_VAN_MAX_SEGMENTS_V2);
    size_t head_bytes = head.kind == Kind::kPiece ? piece_head_bytes(n) : wire_head_bytes(n);
    if (header_length < head_bytes)
      why = "header of " + std::to_string(header_length) + " bytes";
    else
      std::memcpy(&head, header, wire_head_bytes(n));
    if (why.empty() && head.kind == Kind::kPiece)
      std::memcpy(&offset, static_cast<const unsigned char*>(header) + wire_head_bytes(n),
                  sizeof offset);
    if (why.empty()) check(head, offset, header_length, length, &why);
    if (why.empty() && rndv && head.kind == Kind::kPiece) why = "a piece sent by rendezvous";
  }
  if (!why.empty()) {
    // Without a trustworthy stream and sequence it cannot take its turn;
    // a rendezvous descriptor not received is dropped by UCX (UCS_OK).
    host_.log(CARAVAN_LOG_WARNING, "dropped a malformed message: " + why);
    return UCS_OK;
  }
  Stream& stream = streams_[head.stream];
  if (head.kind == Kind::kHello) {
    ++hellos_;
    if (!rndv && length < CARAVAN_VAN_MAX_ADDRESS_V2)
      stream.name.assign(static_cast<const char*>(data), length);
    if (stream.next_seq == 0) stream.next_seq = 1;
    advance(head.stream);
    return UCS_OK;
  }
  if (head.kind == Kind::kPiece) return piece(head, offset, header, data, length);
  if (head.seq < stream.next_seq || stream.waiting.count(head.seq)) {
    host_.log(CARAVAN_LOG_WARNING, "dropped message " + std::to_string(head.seq) + " from " +
                                       stream.name + ": received twice");
    return UCS_OK;
  }
  Incoming* in = open(stream, head);
  ucs_status_t answer = UCS_OK;
  const bool keepable = !rndv && (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) &&
                        head.data_segment != kEverySegment && length >= kKeepBytes;
  if (!place(*in, keepable ? head.data_segment : kEverySegment, &why)) {
    host_.log(CARAVAN_LOG_WARNING, "dropped a message of " + std::to_string(length) +
                                       " bytes from " + stream.name + ": " + why);
    in->failed = true;
  } else if (!rndv) {
    copy_from_header(*in, head, header);
    if (keepable && !in->where[head.data_segment]) {
      in->where[head.data_segment] = static_cast<unsigned char*>(data);
      in->kept = data;
      in->worker = worker_;
      answer = UCS_INPROGRESS;  // the van owns UCX's buffer until release()
    } else {
      const auto* from = static_cast<const unsigned char*>(data);
      for (size_t i = 0; i < in->num_segments; ++i)
        if (in_data(head, i) && in->lens[i]) {
          std::memcpy(in->where[i], from, in->lens[i]);
          from += in->lens[i];
        }
    }
    in->complete = true;
  } else {
    copy_from_header(*in, head, header);
    size_t n = 0;
    for (size_t i = 0; i < in->num_segments; ++i)
      if (in_data(head, i) && in->lens[i]) in->iov[n++] = {in->where[i], in->lens[i]};
    ucp_request_param_t p{};
    p.op_attr_mask =
        UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
    p.cb.recv_am = &Inbox::received;
    p.user_data = in;
    // One segment goes as contiguous memory, which every UCX protocol
    // takes (its zero-copy ones included); several as an I/O vector. (Over
    // TCP, UCX 1.13 still copies large messages: docs/van-ucx.md.)
    p.datatype = n == 1 ? ucp_dt_make_contig(1) : ucp_dt_make_iov();
    void* buffer = n == 1 ? in->iov[0].buffer : static_cast<void*>(in->iov);
    size_t count = n == 1 ? in->iov[0].length : n;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_, data, buffer, count, &p);
    if (r == nullptr) {
      in->complete = true;
    } else if (UCS_PTR_IS_ERR(r)) {
      host_.log(CARAVAN_LOG_WARNING,
                "dropped a message of " + std::to_string(length) + " bytes from " + stream.name +
                    ": receiving it failed: " + ucs_status_string(UCS_PTR_STATUS(r)));
      in->failed = true;
    } else {
      in->request = r;
    }
    answer = UCS_INPROGRESS;  // UCX owns the descriptor now
  }
  advance(head.stream);
  return answer;
}

Incoming* Inbox::open(Stream& stream, const WireHead& head) {
  auto owned = std::make_unique<Incoming>();
  Incoming* in = owned.get();
  in->stream = head.stream;
  in->seq = head.seq;
  in->slot = head.slot;
  in->num_segments = head.num_segments;
  std::memcpy(in->lens, head.lens, sizeof(uint64_t) * head.num_segments);
  stream.waiting.emplace(head.seq, std::move(owned));
  return in;
}

ucs_status_t Inbox::piece(const WireHead& head, uint64_t offset, const void* header,
                          const void* data, size_t length) {
  Stream& stream = streams_[head.stream];
  const size_t d = head.data_segment;
  auto drop = [&](const std::string& why) {
    host_.log(CARAVAN_LOG_WARNING,
              "dropped message " + std::to_string(head.seq) + " from " + stream.name + ": " + why);
  };
  if (head.seq < stream.next_seq) return drop("a piece of it came after its end"), UCS_OK;
  auto it = stream.waiting.find(head.seq);
  Incoming* in = nullptr;
  std::string why;
  if (it == stream.waiting.end()) {
    in = open(stream, head);
    in->missing = head.lens[d];
    if (!place(*in, kEverySegment, &why)) {
      drop("no room for its pieces: " + why);
      in->failed = true;
    }
  } else {
    in = it->second.get();
    if (in->num_segments != head.num_segments ||
        std::memcmp(in->lens, head.lens, sizeof(uint64_t) * head.num_segments) != 0 ||
        length > in->missing) {
      if (!in->failed) drop("its pieces disagree on its segments");
      in->failed = true;
      in->missing = length;  // dropped in its turn, with this piece
    }
  }
  if (!in->failed) {
    std::memcpy(in->where[d] + offset, data, length);
    if (offset == 0) copy_from_header(*in, head, header);
  }
  in->missing -= length;
  if (!in->missing && !in->failed) in->complete = true;
  advance(head.stream);
  return UCS_OK;
}

void Inbox::received(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* in = static_cast<Incoming*>(user_data);
  ucp_request_free(request);
  in->request = nullptr;
  Inbox& inbox = *in->inbox;
  if (status == UCS_OK) {
    in->complete = true;
  } else {
    in->failed = true;
    if (!inbox.closed_)
      inbox.host_.log(CARAVAN_LOG_WARNING,
                      "dropped a message from " + inbox.streams_[in->stream].name +
                          ": its data did not arrive: " + ucs_status_string(status));
  }
  if (!inbox.closed_) inbox.advance(in->stream);
}

bool Inbox::in_data(const WireHead& head, size_t segment) {
  return head.data_segment == kEverySegment || head.data_segment == segment;
}

void Inbox::copy_from_header(Incoming& in, const WireHead& head, const void* header) {
  const size_t n = in.num_segments;
  const auto* from = static_cast<const unsigned char*>(header) +
                     (head.kind == Kind::kPiece ? piece_head_bytes(n) : wire_head_bytes(n));
  for (size_t i = 0; i < in.num_segments; ++i)
    if (!in_data(head, i) && in.lens[i]) {
      std::memcpy(in.where[i], from, in.lens[i]);
      from += in.lens[i];
    }
}

bool Inbox::place(Incoming& in, size_t keep, std::string* why) {
  in.inbox = this;
  auto it = lends_.find(in.slot);
  if (in.slot != 0 && it != lends_.end()) {
    Lend& l = *it->second;
    // A message of another stream still waiting for pieces gives the lend
    // up (its bytes move to the van's memory): its sender may be gone, and
    // nothing in UCX tells the receiver so.
    if (l.taker && l.taker->missing && l.taker->stream != in.stream &&
        l.segment < in.num_segments && in.lens[l.segment] == l.len)
      take_back(l);
    if (!l.taker && l.segment < in.num_segments && in.lens[l.segment] == l.len) {
      l.taker = &in;
      in.lend = &l;
      in.lent_segment = l.segment;
    }
  }
  // A message with a lend is received whole into memory it owns, so that
  // dropping it (take) never has a UCX buffer to give back.
  if (in.lend) keep = kEverySegment;
  auto own = [&](size_t i) { return !(in.lend && i == in.lent_segment) && i != keep; };
  size_t total = 0;
  for (size_t i = 0; i < in.num_segments; ++i)
    if (own(i)) total += round_up(in.lens[i]);
  in.memory = allocate(total);
  if (!in.memory) {
    unclaim(in);
    return *why = "no memory for " + std::to_string(total) + " bytes", false;
  }
  size_t offset = 0;
  for (size_t i = 0; i < in.num_segments; ++i) {
    if (in.lend && i == in.lent_segment) {
      in.where[i] = in.lend->buf;
    } else if (own(i)) {
      in.where[i] = in.memory + offset;
      offset += round_up(in.lens[i]);
    }
  }
  return true;
}

void Inbox::unclaim(Incoming& in) {
  if (!in.lend) return;
  in.lend->taker = nullptr;
  in.lend = nullptr;
}

void Inbox::advance(uint64_t stream_id) {
  Stream& stream = streams_[stream_id];
  while (!stream.waiting.empty()) {
    auto first = stream.waiting.begin();
    Incoming& in = *first->second;
    // A message dropped while its pieces arrive waits for the last one.
    if (first->first != stream.next_seq || !(in.complete || in.failed) || in.missing) break;
    ++stream.next_seq;
    in.peer = stream.name;
    if (in.failed) {
      unclaim(in);
    } else {
      ready_.push_back(std::move(first->second));
    }
    stream.waiting.erase(first);
  }
}

size_t Inbox::take(caravan_van_event_v2* events, size_t capacity,
                   const std::function<void*(std::unique_ptr<Incoming>)>& hand_out) {
  size_t n = 0;
  while (n < capacity && !ready_.empty()) {
    std::unique_ptr<Incoming> in = std::move(ready_.front());
    ready_.pop_front();
    if (in->failed) {  // unlend found no memory to move its lent segment to
      host_.log(CARAVAN_LOG_WARNING,
                "dropped a message from " + in->peer + ": no memory to move it out of lent memory");
      continue;
    }
    if (in->lend) {  // the lend is over: the message stays in the engine's buffer
      lends_.erase(in->slot);
      in->lend = nullptr;
    }
    caravan_van_event_v2& e = events[n++];
    std::memset(&e, 0, sizeof e);
    e.type = CARAVAN_VAN_EVENT_RECEIVED;
    e.status = CARAVAN_STATUS_OK;
    e.message.num_segments = in->num_segments;
    for (size_t i = 0; i < in->num_segments; ++i)
      e.message.segments[i] = {in->where[i], static_cast<size_t>(in->lens[i])};
    e.message.peer = in->peer.c_str();  // lives with the record, until release()
    e.message.van_token = hand_out(std::move(in));
  }
  return n;
}

void Inbox::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  unlend(slot);
  lends_.emplace(slot,
                 std::make_unique<Lend>(Lend{static_cast<unsigned char*>(buf), len, segment}));
}

void Inbox::unlend(uint64_t slot) {
  auto it = lends_.find(slot);
  if (it == lends_.end()) return;
  take_back(*it->second);
  lends_.erase(slot);
}

void Inbox::take_back(Lend& lend) {
  if (!lend.taker) return;
  auto deadline = std::chrono::steady_clock::now() + kTakeBackWait;
  bool cancelled = false;
  // A receive into the lent memory finishes first: UCX writes there until
  // it completes. Its completion may drop the message, which unclaims.
  while (lend.taker && lend.taker->request) {
    if (!cancelled && std::chrono::steady_clock::now() > deadline) {
      host_.log(CARAVAN_LOG_WARNING,
                "unlend: the receive of a message from " + streams_[lend.taker->stream].name +
                    " into lent memory did not finish in " + std::to_string(kTakeBackWait.count()) +
                    " s; cancelling it");
      ucp_request_cancel(worker_, lend.taker->request);
      cancelled = true;
    }
    ucp_worker_progress(worker_);
  }
  Incoming* in = lend.taker;
  if (!in) return;
  in->moved = allocate(lend.len);
  if (in->moved) {
    if (lend.len) std::memcpy(in->moved, lend.buf, lend.len);
    in->where[in->lent_segment] = in->moved;
  } else {
    in->failed = true;  // dropped in its turn, with a log line
  }
  in->lend = nullptr;
  lend.taker = nullptr;
}

}  // namespace caravan::van_ucx
