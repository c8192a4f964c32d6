// Requests to send read with remote reads: into a pooled registered buffer
// when the receive pool has room, otherwise piece by piece through the one
// bounce buffer. A notice (kFin) tells the sender once the reads are over.
#include <algorithm>
#include <cstring>

#include "rendezvous/receiver.h"

namespace caravan::rendezvous {

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

void Receiver::queue_read(InMsg* m, Buffer* into, const Piece& piece) {
  auto* op = new Op;
  op->kind = OpKind::kRead;
  op->buf = into;
  op->offset = piece.offset;
  // A bounce buffer holds one piece at a time; a pooled one the whole message.
  op->into = into == bounce_ ? into->data : into->data + piece.offset;
  op->len = piece.len;
  op->addr = m->src->addr;
  op->raddr = piece.raddr;
  op->key = piece.key;
  op->msg = m;
  posts_.queue(op);
  ++m->reads_left;
}

void Receiver::start_reads() {
  while (!rts_wait_.empty()) {
    InMsg* m = rts_wait_.front();
    Buffer* b = mem_.receive_pool().acquire(m->total, pooled_msgs_ > 0);
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
      if (!bounce_) bounce_ = mem_.bounce_pool().acquire(mem_.bounce_bytes(), false);
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

void Receiver::read_done(Op* op, bool ok) {
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
  read_message_done(m, ok);
}

void Receiver::read_message_done(InMsg* m, bool ok) {
  if (!ok) m->failed = true;
  if (--m->reads_left) return;
  // The notice goes even after a failure, so the sender frees its buffer.
  Buffer* b = mem_.send_pool().acquire(cfg_.eager_bytes, false);
  Frame f;
  f.kind = Kind::kFin;
  f.seq = m->xfer;
  posts_.queue(frame_op(m->src->addr, b, encode_header(f, b->data)));
  m->ready = true;
  deliver(*m->src);
}

}  // namespace caravan::rendezvous
