// The receiving side's frames as they arrive, the receive ring, delivery
// in stream order, and buffers lent back as messages are released.
#include "rendezvous/receiver.h"

#include <algorithm>
#include <cstring>

namespace caravan::rendezvous {

Receiver::Receiver(Transport& t, const Config& cfg, LogFn log, RegisteredMemory& mem,
                   PostQueue& posts, GrantTable& grants, Inbox& inbox)
    : t_(t),
      cfg_(cfg),
      log_(std::move(log)),
      mem_(mem),
      posts_(posts),
      grants_(grants),
      inbox_(inbox) {}

Receiver::~Receiver() { clear(); }

void Receiver::post_receives() {
  if (ring_queued_) return;
  ring_queued_ = true;
  for (size_t i = 0; i < cfg_.rx_depth; ++i) {
    auto* op = new Op;
    op->kind = OpKind::kRecv;
    op->buf = mem_.receive_pool().acquire(cfg_.eager_bytes, false);
    op->len = cfg_.eager_bytes;
    posts_.queue(op);
  }
}

void Receiver::drop_receive(Op* op) {
  mem_.receive_pool().put(op->buf);
  delete op;
}

void Receiver::drop(const std::string& peer, const std::string& why) {
  log_(CARAVAN_LOG_WARNING, "dropped a malformed frame from " + peer + ": " + why);
}

bool Receiver::parse(const char* buf, size_t len, Frame* f) {
  std::string why;
  if (parse_frame(buf, len, f, &why)) return true;
  uint64_t stream = 0;
  if (len >= 16) std::memcpy(&stream, buf + 8, 8);
  auto it = sources_.find(stream);
  drop(it != sources_.end() ? it->second->peer : "an unknown peer", why);
  return false;
}

void Receiver::on_hello(const Frame& f) {
  std::string name(f.payload, f.payload_len);
  if (sources_.count(f.stream)) return drop(t_.describe(name), "second hello for a stream");
  auto src = std::make_unique<Source>();
  try {
    src->addr = t_.resolve(name);
  } catch (const std::exception& e) {
    return drop(t_.describe(name), e.what());
  }
  src->peer = t_.describe(name);
  src->stream = f.stream;
  sources_.emplace(f.stream, std::move(src));
  auto early = early_.find(f.stream);
  if (early == early_.end()) return;
  auto frames = std::move(early->second);
  early_.erase(early);
  for (const std::string& frame : frames) {
    Frame g;
    if (parse(frame.data(), frame.size(), &g)) on_frame(g, frame.data(), frame.size());
  }
}

void Receiver::on_frame(const Frame& f, const char* buf, size_t len) {
  if (f.kind == Kind::kHello) return on_hello(f);
  auto sit = sources_.find(f.stream);
  if (sit == sources_.end()) {
    // Completions may come out of order, so a stream's first frames can
    // beat its hello: keep them (boundedly) until it comes.
    auto& held = early_[f.stream];
    if (held.size() >= kMaxEarlyFrames)
      return drop("an unknown peer", "frame for a stream without hello");
    held.emplace_back(buf, len);
    return;
  }
  Source& src = *sit->second;
  InMsg* m = nullptr;
  auto pit = src.pending.find(f.seq);
  if (f.kind == Kind::kChunk && pit != src.pending.end() && !pit->second->ready &&
      pit->second->heap) {
    m = pit->second;
    if (f.total != m->total || f.nseg != m->nseg)
      return drop(src.peer, "chunk does not match its message");
  } else {
    if (f.seq < src.next_seq || pit != src.pending.end())
      return drop(src.peer, "message " + std::to_string(f.seq) + " repeated");
    m = new InMsg;
    m->src = &src;
    m->seq = f.seq;
    m->nseg = f.nseg;
    std::copy(f.lens, f.lens + f.nseg, m->lens);
    m->total = f.total;
    src.pending[f.seq] = m;
  }
  switch (f.kind) {
    case Kind::kEager:
      m->heap.reset(new char[std::max<size_t>(f.total, 1)]);
      m->data = m->heap.get();
      if (f.total) std::memcpy(m->data, f.payload, f.total);
      m->ready = true;
      break;
    case Kind::kRts:
      m->xfer = f.xfer;
      m->inline_mask = f.inline_mask;
      std::copy(f.raddrs, f.raddrs + kMaxSegments, m->raddrs);
      std::copy(f.keys, f.keys + kMaxSegments, m->keys);
      m->inline_bytes.assign(f.payload, f.payload_len);
      m->slot = f.slot;
      if (f.grant) take_back(f);
      rts_wait_.push_back(m);
      start_reads();
      break;
    case Kind::kChunk:
      // Chunks may also complete out of order; each says where it goes.
      if (!m->heap) {
        m->heap.reset(new char[f.total]);
        m->data = m->heap.get();
      }
      std::memcpy(m->data + f.offset, f.payload, f.payload_len);
      m->filled += f.payload_len;
      if (m->filled > m->total) return drop(src.peer, "chunks overlap");
      m->ready = m->filled == m->total;
      break;
    case Kind::kPut: {
      Grant* g = grants_.claim(f.grant, &src, f.total);
      if (!g) {
        src.pending.erase(f.seq);
        delete m;
        return drop(src.peer,
                    "write notice for grant " + std::to_string(f.grant) + ", not lent to it");
      }
      ++pooled_msgs_;
      m->pooled = g->buf;
      m->data = m->pooled->data;
      m->grant = f.grant;
      m->slot = g->slot;
      size_t off = 0, in = 0;
      for (size_t i = 0; i < m->nseg; off += m->lens[i], ++i) {
        if (!(f.inline_mask >> i & 1) || m->lens[i] == 0) continue;
        std::memcpy(m->data + off, f.payload + in, m->lens[i]);
        in += m->lens[i];
      }
      m->ready = true;
      break;
    }
    default:
      break;
  }
  deliver(src);
}

bool Receiver::released(InMsg* m) {
  if (!m->pooled) return false;
  --pooled_msgs_;
  bool lent = lend(m);
  if (!lent) mem_.receive_pool().put(m->pooled);
  return lent || !rts_wait_.empty();
}

// Lends a released message's buffer to its sender for the message's slot
// (when the grant table takes it) and tells the sender where it is.
bool Receiver::lend(InMsg* m) {
  const Grant* g = grants_.lend(*m);
  if (!g) return false;
  Buffer* b = mem_.send_pool().acquire(cfg_.eager_bytes, false);
  Frame f;
  f.kind = Kind::kGrant;
  f.stream = g->src->stream;
  f.seq = g->id;
  f.slot = g->slot;
  f.raddrs[0] = g->buf->reg.remote_base;
  f.keys[0] = g->buf->reg.key;
  f.capacity = g->buf->capacity;
  posts_.queue(frame_op(g->src->addr, b, encode_header(f, b->data)));
  return true;
}

// A grant the sender hands back unused in a request to send.
void Receiver::take_back(const Frame& f) {
  if (Buffer* b = grants_.take_back(f.stream, f.grant)) mem_.receive_pool().put(b);
}

// Hands over the stream's messages that are next in line and complete.
void Receiver::deliver(Source& src) {
  for (;;) {
    auto it = src.pending.find(src.next_seq);
    if (it == src.pending.end() || !it->second->ready) break;
    InMsg* m = it->second;
    src.pending.erase(it);
    ++src.next_seq;
    if (m->failed) {
      log_(CARAVAN_LOG_ERROR, "message " + std::to_string(m->seq) + " from " + src.peer +
                                  " lost: its remote read failed");
      if (m->pooled) {
        mem_.receive_pool().put(m->pooled);
        --pooled_msgs_;
      }
      delete m;
      continue;
    }
    delivered_.push_back(m);
  }
  inbox_.add(delivered_);
}

void Receiver::clear() {
  for (auto& s : sources_)
    for (auto& p : s.second->pending) delete p.second;
  sources_.clear();
  early_.clear();
  rts_wait_.clear();
  bounce_ = nullptr;
  bouncing_ = nullptr;
}

}  // namespace caravan::rendezvous
