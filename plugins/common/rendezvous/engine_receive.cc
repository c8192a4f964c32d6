// The receiving side of the rendezvous engine: frames as they arrive,
// remote reads, and delivery in each stream's order.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "caravan/plugin/plugin_cxx.hpp"
#include "rendezvous/engine_parts.h"

namespace caravan::rendezvous {

using plugin::Error;

caravan_status Engine::recv(int timeout_ms, caravan_van_message_v1* out) {
  if (!out || out->struct_size < sizeof(caravan_van_message_v1))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "recv: message struct missing or too small");
  std::unique_lock<std::mutex> lock(mu_);
  ++in_recv_;
  auto ready = [&] { return closing_ || !ready_.empty(); };
  if (timeout_ms < 0) ready_cv_.wait(lock, ready);
  else ready_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  --in_recv_;
  if (closing_) {
    ready_cv_.notify_all();
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

void Engine::release(caravan_van_message_v1* msg) {
  if (!msg) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: message is NULL");
  auto* m = static_cast<InMsg*>(msg->van_token);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!held_.erase(m))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: not a message this van handed out");
    if (m->pooled) {
      --pooled_msgs_;
      bool lent = lend(m);
      if (!lent) rx_pool_.put(m->pooled);
      wake = lent || !rts_wait_.empty();
    }
  }
  msg->van_token = nullptr;
  delete m;
  if (wake) t_.wake();
}

void Engine::drop(const std::string& peer, const std::string& why) {
  log_(CARAVAN_LOG_WARNING, "dropped a malformed frame from " + peer + ": " + why);
}

void Engine::on_frame(const char* buf, size_t len) {
  Frame f;
  std::string why;
  if (!parse_frame(buf, len, &f, &why)) {
    uint64_t stream = 0;
    if (len >= 16) std::memcpy(&stream, buf + 8, 8);
    auto it = sources_.find(stream);
    return drop(it != sources_.end() ? it->second->peer : "an unknown peer", why);
  }
  if (f.kind == Kind::kHello) {
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
    if (early != early_.end()) {
      auto frames = std::move(early->second);
      early_.erase(early);
      for (const std::string& frame : frames) on_frame(frame.data(), frame.size());
    }
    return;
  }
  if (f.kind == Kind::kFin) {
    if (transfers_.count(f.seq)) return settle(f.seq, CARAVAN_STATUS_OK);
    if (withdrawn_.erase(f.seq)) return;  // read (or failed) after its stream was disconnected
    return drop("a peer", "notice for unknown transfer " + std::to_string(f.seq));
  }
  if (f.kind == Kind::kGrant) return on_grant(f);
  auto sit = sources_.find(f.stream);
  if (sit == sources_.end()) {
    // Completions may come out of order, so a stream's first frames can
    // beat its hello: keep them (boundedly) until it comes.
    auto& held = early_[f.stream];
    if (held.size() >= kMaxEarlyFrames) return drop("an unknown peer", "frame for a stream without hello");
    held.emplace_back(buf, len);
    return;
  }
  Source& src = *sit->second;
  InMsg* m = nullptr;
  auto pit = src.pending.find(f.seq);
  if (f.kind == Kind::kChunk && pit != src.pending.end() && !pit->second->ready && pit->second->heap) {
    m = pit->second;
    if (f.total != m->total || f.nseg != m->nseg) return drop(src.peer, "chunk does not match its message");
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
      auto g = grants_.find(f.grant);
      if (g == grants_.end() || g->second.src != &src || g->second.busy || f.total > g->second.buf->capacity) {
        src.pending.erase(f.seq);
        delete m;
        return drop(src.peer, "write notice for grant " + std::to_string(f.grant) + ", not lent to it");
      }
      g->second.busy = true;
      ++pooled_msgs_;
      m->pooled = g->second.buf;
      m->data = m->pooled->data;
      m->grant = f.grant;
      m->slot = g->second.slot;
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

// Under mu_, as a message is released: lends its buffer to the sender for
// the message's slot, when the slot has none lent yet and the cache has
// room, or lends the same buffer again when it came through the cache.
bool Engine::lend(InMsg* m) {
  if (!m->slot || closing_) return false;
  uint64_t id = m->grant;
  if (id) {
    grants_.at(id).busy = false;
  } else {
    auto slot = std::make_pair(m->src->stream, m->slot);
    if (grant_of_.count(slot) || counts_.lent_bytes + m->pooled->capacity > cfg_.cache_bytes) return false;
    id = next_grant_++;
    grants_[id] = Grant{m->src, m->slot, m->pooled, false};
    grant_of_[slot] = id;
    counts_.lent_bytes += m->pooled->capacity;
    ++counts_.lent;
  }
  const Grant& g = grants_.at(id);
  Buffer* b = tx_pool_.acquire(cfg_.eager_bytes, false);
  Frame f;
  f.kind = Kind::kGrant;
  f.stream = g.src->stream;
  f.seq = id;
  f.slot = g.slot;
  f.raddrs[0] = g.buf->reg.remote_base;
  f.keys[0] = g.buf->reg.key;
  f.capacity = g.buf->capacity;
  ctl_.push_back(frame_op(g.src->addr, b, encode_header(f, b->data)));
  return true;
}

// A buffer lent to us (a stream of ours): kept for the slot's next message.
void Engine::on_grant(const Frame& f) {
  Stream* s = stream_by_id(f.stream);
  if (!s) return;  // disconnected since: the peer keeps the buffer until it finalizes
  s->grants[f.slot] = RemoteGrant{f.seq, f.raddrs[0], f.keys[0], f.capacity};
}

// A grant the sender hands back unused: nothing writes it any more.
void Engine::take_back(const Frame& f) {
  auto g = grants_.find(f.grant);
  if (g == grants_.end() || g->second.src->stream != f.stream || g->second.busy) return;
  grant_of_.erase({f.stream, g->second.slot});
  counts_.lent_bytes -= g->second.buf->capacity;
  rx_pool_.put(g->second.buf);
  grants_.erase(g);
}

Counts Engine::counts() {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

namespace {

// Puts a request to send's inline segments in place and lists the reads
// that fetch the others, at most max_piece bytes each. Segments the sender
// laid out back to back under one key (a staging buffer) take one read.
std::vector<Piece> place(InMsg& m, size_t max_piece) {
  std::vector<Piece> runs;
  size_t off = 0, in = 0;
  for (size_t i = 0; i < m.nseg; off += m.lens[i], ++i) {
    if (m.lens[i] == 0) continue;
    if (m.inline_mask >> i & 1) {
      std::memcpy(m.data + off, m.inline_bytes.data() + in, m.lens[i]);
      in += m.lens[i];
      continue;
    }
    Piece* last = runs.empty() ? nullptr : &runs.back();
    if (last && last->offset + last->len == off && last->raddr + last->len == m.raddrs[i] &&
        last->key == m.keys[i]) {
      last->len += m.lens[i];
    } else {
      runs.push_back({off, m.raddrs[i], m.keys[i], m.lens[i]});
    }
  }
  m.inline_bytes.clear();
  m.inline_bytes.shrink_to_fit();
  std::vector<Piece> pieces;
  for (const Piece& r : runs)
    for (size_t o = 0; o < r.len; o += max_piece)
      pieces.push_back({r.offset + o, r.raddr + o, r.key, std::min(max_piece, r.len - o)});
  return pieces;
}

}  // namespace

void Engine::queue_read(InMsg* m, Buffer* into, const Piece& piece) {
  auto* op = new Op;
  op->kind = OpKind::kRead;
  op->buf = into;
  op->offset = piece.offset;
  op->len = piece.len;
  op->addr = m->src->addr;
  op->raddr = piece.raddr;
  op->key = piece.key;
  op->msg = m;
  ctl_.push_back(op);
  ++m->reads_left;
}

void Engine::start_reads() {
  while (!rts_wait_.empty()) {
    InMsg* m = rts_wait_.front();
    Buffer* b = rx_pool_.acquire(m->total, pooled_msgs_ > 0);
    if (b) {
      ++pooled_msgs_;
      m->pooled = b;
      m->data = b->data;
      for (const Piece& p : place(*m, cfg_.read_chunk)) queue_read(m, b, p);
    } else {
      // Every pooled buffer is held by the application, which may keep
      // them until it has this very message: waiting for a release could
      // wait forever, so read it through the bounce buffer instead.
      if (bouncing_) return;  // pump() calls again once it is free
      if (!bounce_) bounce_ = bounce_pool_.acquire(bounce_bytes_, false);
      m->heap.reset(new char[m->total]);
      m->data = m->heap.get();
      m->pieces = place(*m, bounce_->capacity);
      m->next_piece = 0;
      bouncing_ = m;
      queue_read(m, bounce_, m->pieces[m->next_piece++]);
    }
    rts_wait_.pop_front();
  }
}

// Called with mu_ held, once per read posted (or refused by the transport).
void Engine::read_finished(Op* op, bool ok) {
  InMsg* m = op->msg;
  if (op->buf == bounce_) {
    if (ok) std::memcpy(m->data + op->offset, bounce_->data, op->len);
    delete op;
    if (ok && m->next_piece < m->pieces.size()) {
      --m->reads_left;
      queue_read(m, bounce_, m->pieces[m->next_piece++]);
      return;
    }
    m->pieces.clear();
    bouncing_ = nullptr;
  } else {
    delete op;
  }
  on_read_done(m, ok);
}

void Engine::on_read_done(InMsg* m, bool ok) {
  if (!ok) m->failed = true;
  if (--m->reads_left) return;
  // The notice goes even after a failure, so the sender frees its buffer.
  Buffer* b = tx_pool_.acquire(cfg_.eager_bytes, false);
  Frame f;
  f.kind = Kind::kFin;
  f.seq = m->xfer;
  ctl_.push_back(frame_op(m->src->addr, b, encode_header(f, b->data)));
  m->ready = true;
  deliver(*m->src);
}

// Hands over the stream's messages that are next in line and complete.
void Engine::deliver(Source& src) {
  bool any = false;
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
        rx_pool_.put(m->pooled);
        --pooled_msgs_;
      }
      delete m;
      continue;
    }
    ready_.push_back(m);
    any = true;
  }
  if (any) ready_cv_.notify_all();
}

}  // namespace caravan::rendezvous
