// The sending side of the rendezvous engine: eager frames, requests to
// send with their staging, and chunked sends.
#include <algorithm>
#include <cstring>

#include "caravan/plugin/plugin_cxx.hpp"
#include "rendezvous/engine_parts.h"

namespace caravan::rendezvous {

using plugin::Error;

namespace {

// Copies bytes [offset, offset+len) of the concatenated segments to dst.
void copy_range(const std::vector<caravan_segment_v1>& segs, size_t offset, size_t len, char* dst) {
  for (const auto& s : segs) {
    if (len == 0) break;
    if (offset >= s.len) {
      offset -= s.len;
      continue;
    }
    size_t n = std::min(len, s.len - offset);
    std::memcpy(dst, static_cast<const char*>(s.data) + offset, n);
    dst += n;
    len -= n;
    offset = 0;
  }
}

Frame data_frame(Kind kind, const Job& job) {
  Frame f;
  f.kind = kind;
  f.nseg = static_cast<uint8_t>(job.segs.size());
  for (size_t i = 0; i < job.segs.size(); ++i) f.lens[i] = job.segs[i].len;
  f.stream = job.stream;
  f.seq = job.seq;
  return f;
}

}  // namespace

void Engine::send(uint64_t peer, const caravan_segment_v1* segs, size_t n, caravan_send_done_fn done,
                  void* cookie) {
  if (!segs || n == 0 || n > kMaxSegments)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                std::to_string(n) + " segments (1 to " + std::to_string(kMaxSegments) + " allowed)");
  auto job = std::make_unique<Job>();
  job->segs.assign(segs, segs + n);
  for (size_t i = 0; i < n; ++i) {
    if (!segs[i].data && segs[i].len)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "segment " + std::to_string(i) + " has no data");
    job->total += segs[i].len;
  }
  job->done = done;
  job->cookie = cookie;
  const size_t hdr = header_size(Kind::kEager, n);
  const bool eager = hdr + job->total <= cfg_.eager_bytes;

  // Copies happen outside the lock so senders on several threads overlap.
  Buffer* frame = nullptr;
  Buffer* staged = nullptr;
  if (eager) {
    frame = tx_pool_.acquire(cfg_.eager_bytes, false);
    copy_range(job->segs, 0, job->total, frame->data + hdr);
  } else if (cfg_.rma) {
    bool may_wait;
    {
      std::lock_guard<std::mutex> lock(mu_);
      may_wait = !staged_.empty();
    }
    staged = tx_pool_.acquire(job->total, may_wait);
    if (staged) {
      frame = tx_pool_.acquire(cfg_.eager_bytes, false);
      copy_range(job->segs, 0, job->total, staged->data);
    }
  }
  bool copied = frame != nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(peer);
    if (closing_ || it == streams_.end()) {
      tx_pool_.put(frame);
      tx_pool_.put(staged);
      if (closing_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "not connected");
    }
    Stream& s = *it->second;
    job->stream = s.id;
    job->to = s.addr;
    job->seq = s.next_seq++;
    if (eager) {
      Frame f = data_frame(Kind::kEager, *job);
      encode_header(f, frame->data);
      job->op = frame_op(s.addr, frame, hdr + job->total);
    } else if (staged) {
      Frame f = data_frame(Kind::kRts, *job);
      f.xfer = next_xfer_++;
      f.raddr = staged->reg.remote_base;
      f.key = staged->reg.key;
      staged_[f.xfer] = staged;
      job->op = frame_op(s.addr, frame, encode_header(f, frame->data));
    } else {
      job->type = cfg_.rma ? Job::kStage : Job::kChunked;
    }
    if (copied) {
      // The caller's memory is free already: done runs below, once, and
      // neither disconnect() nor close() may run it again.
      job->segs.clear();
      job->done = nullptr;
    }
    out_.push_back(job.release());
  }
  t_.wake();
  if (copied && done) done(cookie, CARAVAN_STATUS_OK);
}

Buffer* Engine::stage(const Job& job) {
  Buffer* staged = tx_pool_.acquire(job.total, !staged_.empty());
  if (staged) copy_range(job.segs, 0, job.total, staged->data);
  return staged;
}

bool Engine::step_job(Job& job, Dones& dones) {
  if (job.type == Job::kStage && !job.op) {
    Buffer* staged = stage(job);
    if (!staged) return false;
    Buffer* b = tx_pool_.acquire(cfg_.eager_bytes, false);
    Frame f = data_frame(Kind::kRts, job);
    f.xfer = next_xfer_++;
    f.raddr = staged->reg.remote_base;
    f.key = staged->reg.key;
    staged_[f.xfer] = staged;
    job.op = frame_op(job.to, b, encode_header(f, b->data));
    dones.push_back({job.done, job.cookie, CARAVAN_STATUS_OK});
    job.done = nullptr;
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
        dones.push_back({job.done, job.cookie, CARAVAN_STATUS_OK});
        job.done = nullptr;
        return true;
      }
    }
    Buffer* b = tx_pool_.acquire(cfg_.eager_bytes, false);
    size_t n = std::min<size_t>(cfg_.eager_bytes - hdr, job.total - job.offset);
    Frame f = data_frame(Kind::kChunk, job);
    f.offset = job.offset;
    encode_header(f, b->data);
    copy_range(job.segs, job.offset, n, b->data + hdr);
    job.offset += n;
    job.op = frame_op(job.to, b, hdr + n);
  }
}

}  // namespace caravan::rendezvous
