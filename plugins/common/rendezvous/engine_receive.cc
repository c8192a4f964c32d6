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
      rx_pool_.put(m->pooled);
      --pooled_msgs_;
      wake = !rts_wait_.empty();
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
    auto it = staged_.find(f.seq);
    if (it == staged_.end()) return drop("a peer", "notice for unknown transfer " + std::to_string(f.seq));
    tx_pool_.put(it->second);
    staged_.erase(it);
    return;
  }
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
      m->raddr = f.raddr;
      m->key = f.key;
      m->xfer = f.xfer;
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
    default:
      break;
  }
  deliver(src);
}

void Engine::queue_read(InMsg* m, Buffer* into, size_t offset, size_t len) {
  auto* op = new Op;
  op->kind = OpKind::kRead;
  op->buf = into;
  op->offset = offset;
  op->len = len;
  op->addr = m->src->addr;
  op->raddr = m->raddr + offset;
  op->key = m->key;
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
      for (size_t off = 0; off < m->total; off += cfg_.read_chunk)
        queue_read(m, b, off, std::min<size_t>(cfg_.read_chunk, m->total - off));
    } else {
      // Every pooled buffer is held by the application, which may keep
      // them until it has this very message: waiting for a release could
      // wait forever, so read it through the bounce buffer instead.
      if (bouncing_) return;  // pump() calls again once it is free
      if (!bounce_) bounce_ = bounce_pool_.acquire(bounce_bytes_, false);
      m->heap.reset(new char[m->total]);
      m->data = m->heap.get();
      bouncing_ = m;
      queue_read(m, bounce_, 0, std::min(bounce_->capacity, m->total));
    }
    rts_wait_.pop_front();
  }
}

// Called with mu_ held, once per read posted (or refused by the transport).
void Engine::read_finished(Op* op, bool ok) {
  InMsg* m = op->msg;
  if (op->buf == bounce_) {
    if (ok) std::memcpy(m->data + op->offset, bounce_->data, op->len);
    size_t next = op->offset + op->len;
    delete op;
    if (ok && next < m->total) {
      --m->reads_left;
      queue_read(m, bounce_, next, std::min(bounce_->capacity, m->total - next));
      return;
    }
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
