// Messages written straight into a buffer the receiver lent for their slot
// (the remote-buffer cache): the writes, then a notice (kPut) that hands
// the message to the receiver's application.
#include <algorithm>
#include <cstring>
#include <memory>

#include "rendezvous/sender.h"

namespace caravan::rendezvous {

// Posts the writes of each remote segment to its place in the lent buffer
// (the message's own layout); the notice follows once they have all
// completed.
void Sender::start_put(Job& job, Prepared& p) {
  auto* put = new Put;
  put->job = job;
  put->job.op = nullptr;
  put->p = std::move(p);
  p = Prepared{};
  job.ticket = {};
  puts_.insert(put);
  const Prepared& q = put->p;
  size_t off = 0, staged_off = 0;
  for (size_t i = 0; i < job.segs.size(); off += job.segs[i].len, ++i) {
    size_t len = job.segs[i].len;
    if (len == 0 || (q.inline_mask >> i & 1)) continue;
    const char* local =
        q.staged ? q.staged->data + staged_off : static_cast<const char*>(job.segs[i].data);
    void* desc = q.staged ? q.staged->reg.desc : q.regs[i].desc;
    if (q.staged) staged_off += len;
    for (size_t o = 0; o < len; o += cfg_.read_chunk) {
      auto* op = new Op;
      op->kind = OpKind::kWrite;
      op->addr = job.to;
      op->local = local + o;
      op->len = std::min(cfg_.read_chunk, len - o);
      op->desc = desc;
      op->raddr = job.grant.raddr + off + o;
      op->key = job.grant.key;
      op->put = put;
      posts_.queue(op);
      ++put->writes_left;
    }
  }
}

void Sender::write_done(Op* op, bool ok) {
  Put* put = op->put;
  delete op;
  if (!ok) put->failed = true;
  if (--put->writes_left == 0) finish_put(put);
}

void Sender::release(Prepared& p, SendTicket ticket, caravan_status status) {
  unprepare(p, mem_);
  done_.finished(ticket, status);
}

// The writes are over. The bytes are in the peer's buffer, so the caller's
// memory is free now, whatever becomes of the notice.
void Sender::finish_put(Put* put) {
  puts_.erase(put);
  std::unique_ptr<Put> owned(put);
  Job& job = put->job;
  Prepared& p = put->p;
  if (closed_) return release(p, job.ticket, CARAVAN_STATUS_CLOSED);
  if (!put->failed) {
    Frame f = job.frame(Kind::kPut);
    f.grant = job.grant.id;
    f.inline_mask = p.inline_mask;
    size_t hdr = header_size(Kind::kPut, job.segs.size());
    // prepare() left the inline segments after a request to send's header.
    std::memmove(p.frame->data + hdr, p.frame->data + header_size(Kind::kRts, job.segs.size()),
                 p.inline_bytes);
    encode_header(f, p.frame->data);
    posts_.queue(frame_op(job.to, p.frame, hdr + p.inline_bytes));
    p.frame = nullptr;
    ++by_write_;
    return release(p, job.ticket, CARAVAN_STATUS_OK);
  }
  // The peer never learns of a failed put: it goes again as a request to
  // send that hands the grant back, so the stream does not stall on it.
  log_(CARAVAN_LOG_WARNING,
       "writing a message into a buffer its peer lent failed; sending it by request to send");
  if (!stream_by_id(job.stream)) return release(p, job.ticket, CARAVAN_STATUS_CLOSED);
  auto retry = std::make_unique<Job>(job);
  retry->type = Job::kRts;
  retry->returned = job.grant.id;
  announce(*retry, p);
  out_.push_front(retry.release());
}

}  // namespace caravan::rendezvous
