// The sending side's queue: messages posted in send order, each as one
// frame, a request to send, writes into a lent buffer, or a run of chunks.
#include <algorithm>

#include "rendezvous/sender.h"

namespace caravan::rendezvous {

void Sender::step() {
  while (!out_.empty() && step_job(*out_.front())) {
    delete out_.front();
    out_.pop_front();
  }
}

bool Sender::post(Op* op) {
  PostQueue::Result r = posts_.post(op);
  if (r == PostQueue::Result::kAgain) return false;
  if (r == PostQueue::Result::kFailed) frame_done(op, false);
  return true;
}

void Sender::frame_done(Op* op, bool ok) {
  if (!ok && op->xfer)
    transfers_.settle(op->xfer, CARAVAN_STATUS_IO);  // the peer never heard of it
  mem_.send_pool().put(op->buf);
  delete op;
}

// Gives the prepared request to send its transfer id and frame.
void Sender::announce(Job& job, Prepared& p) {
  job.xfer = transfers_.open(job.stream, p, job.ticket);
  job.ticket = {};
  Frame f = job.frame(Kind::kRts);
  f.xfer = job.xfer;
  f.inline_mask = p.inline_mask;
  f.slot = job.slot;
  f.grant = job.returned;
  std::copy(p.raddrs, p.raddrs + kMaxSegments, f.raddrs);
  std::copy(p.keys, p.keys + kMaxSegments, f.keys);
  size_t hdr = encode_header(f, p.frame->data);
  job.op = frame_op(job.to, p.frame, hdr + p.inline_bytes);
  job.op->xfer = job.xfer;
  p = Prepared{};
  ++by_request_;
}

// False when the job must wait (for room in the send pool, or for the
// transport to take more).
bool Sender::step_job(Job& job) {
  if (job.type == Job::kPut) {
    Prepared p;
    if (!prepare(job.segs, cfg_, mem_, may_wait(), &p)) return false;
    start_put(job, p);
    return true;
  }
  if (job.type == Job::kRts && !job.op) {
    Prepared p;
    if (!prepare(job.segs, cfg_, mem_, may_wait(), &p)) return false;
    announce(job, p);
  }
  if (job.type != Job::kChunked) {
    if (!post(job.op)) return false;
    job.op = nullptr;
    return true;
  }
  const size_t hdr = header_size(Kind::kChunk, job.segs.size());
  for (;;) {
    if (job.op) {
      if (!post(job.op)) return false;
      job.op = nullptr;
      if (job.offset == job.total) {
        done_.finished(job.ticket, CARAVAN_STATUS_OK);
        job.ticket = {};
        return true;
      }
    }
    Buffer* b = mem_.send_pool().acquire(cfg_.eager_bytes, false);
    size_t n = std::min<size_t>(cfg_.eager_bytes - hdr, job.total - job.offset);
    Frame f = job.frame(Kind::kChunk);
    f.offset = job.offset;
    encode_header(f, b->data);
    job.copy(job.offset, n, b->data + hdr);
    job.offset += n;
    job.op = frame_op(job.to, b, hdr + n);
  }
}

}  // namespace caravan::rendezvous
