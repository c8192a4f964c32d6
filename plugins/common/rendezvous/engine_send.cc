// The sending side of the rendezvous engine: eager frames, requests to
// send (with the caller's memory registered, or staged), and chunked sends.
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

void Engine::send(uint64_t peer, uint64_t slot, const caravan_segment_v1* segs, size_t n,
                  caravan_send_done_fn done, void* cookie) {
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
  job->slot = cfg_.cache_bytes ? slot : 0;
  const size_t hdr = header_size(Kind::kEager, n);
  const bool eager = hdr + job->total <= cfg_.eager_bytes;

  // Copies and registrations happen outside the lock so senders on several
  // threads overlap.
  Buffer* frame = nullptr;
  Prepared p;
  bool prepared = false;
  if (eager) {
    frame = tx_pool_.acquire(cfg_.eager_bytes, false);
    copy_range(job->segs, 0, job->total, frame->data + hdr);
  } else if (cfg_.rma) {
    bool may_wait;
    {
      std::lock_guard<std::mutex> lock(mu_);
      may_wait = !transfers_.empty() || !puts_.empty();
    }
    prepared = prepare(*job, may_wait, &p);
  }
  SendCompletions finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(peer);
    if (closing_ || it == streams_.end()) {
      tx_pool_.put(frame);
      if (prepared) unprepare(p);
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
      // The caller's memory is free already: done runs below, once, and
      // neither disconnect() nor close() may run it again.
      done_.finished({job->done, job->cookie}, CARAVAN_STATUS_OK);
      job->done = nullptr;
    } else {
      job->type = cfg_.rma ? Job::kRts : Job::kChunked;
      if (job->slot) take_grant(s, *job);
      if (prepared && job->type == Job::kPut) {
        start_put(*job, p);
        job.reset();
      } else if (prepared) {
        announce(*job, p);
      }
    }
    if (job) out_.push_back(job.release());
    finished = done_.take();
  }
  t_.wake();
  finished.report();
}

// Small segments (headers, keys) travel inline, so that the receiver reads
// only the large ones and every inline segment together still fits a frame.
bool Engine::prepare(const Job& job, bool may_wait, Prepared* p) {
  const size_t inline_max = (cfg_.eager_bytes - header_size(Kind::kRts, kMaxSegments)) / kMaxSegments;
  size_t remote = 0;
  for (size_t i = 0; i < job.segs.size(); ++i) {
    if (job.segs[i].len < inline_max) p->inline_mask |= uint64_t{1} << i;
    else remote += job.segs[i].len;
  }
  Registered r = cfg_.zero_copy ? register_segments(job, may_wait, p) : Registered::kFailed;
  if (r == Registered::kNoRoom) return false;
  if (r == Registered::kFailed) {
    p->staged = tx_pool_.acquire(remote, may_wait);
    if (!p->staged) return false;
    size_t off = 0;
    for (size_t i = 0; i < job.segs.size(); ++i) {
      if (p->inline_mask >> i & 1) continue;
      std::memcpy(p->staged->data + off, job.segs[i].data, job.segs[i].len);
      p->raddrs[i] = p->staged->reg.remote_base + off;
      p->keys[i] = p->staged->reg.key;
      off += job.segs[i].len;
    }
  }
  p->frame = tx_pool_.acquire(cfg_.eager_bytes, false);
  char* out = p->frame->data + header_size(Kind::kRts, job.segs.size());
  for (size_t i = 0; i < job.segs.size(); ++i) {
    if (!(p->inline_mask >> i & 1) || job.segs[i].len == 0) continue;
    std::memcpy(out + p->inline_bytes, job.segs[i].data, job.segs[i].len);
    p->inline_bytes += job.segs[i].len;
  }
  return true;
}

// Registers each remote segment of the caller's for this transfer alone:
// a registration cached past its transfer could outlive the memory (freed,
// then reused at the same address) and be read stale. libfabric keeps its
// own cache with memory monitors underneath where registering is costly.
Engine::Registered Engine::register_segments(const Job& job, bool may_wait, Prepared* p) {
  size_t bytes = 0;
  for (size_t i = 0; i < job.segs.size(); ++i)
    if (!(p->inline_mask >> i & 1)) bytes += job.segs[i].len;
  if (!tx_pool_.charge(bytes, may_wait)) return Registered::kNoRoom;
  p->charged = bytes;
  p->regs.assign(job.segs.size(), Registration{});
  try {
    for (size_t i = 0; i < job.segs.size(); ++i) {
      if (p->inline_mask >> i & 1) continue;
      p->regs[i] = t_.register_memory(const_cast<void*>(job.segs[i].data), job.segs[i].len);
      p->raddrs[i] = p->regs[i].remote_base;
      p->keys[i] = p->regs[i].key;
    }
  } catch (const std::exception& e) {
    for (const Registration& r : p->regs)
      if (r.handle) t_.deregister(r);
    p->regs.clear();
    tx_pool_.discharge(p->charged);
    p->charged = 0;
    if (!warned_register_.exchange(true))
      log_(CARAVAN_LOG_WARNING, std::string("copying large messages instead of registering them: ") + e.what());
    return Registered::kFailed;
  }
  return Registered::kDone;
}

void Engine::unprepare(Prepared& p) { release_prepared(p, nullptr, nullptr, CARAVAN_STATUS_OK); }

// Under mu_: gives the prepared request to send its transfer id and frame.
void Engine::announce(Job& job, Prepared& p) {
  Frame f = data_frame(Kind::kRts, job);
  f.xfer = next_xfer_++;
  f.inline_mask = p.inline_mask;
  f.slot = job.slot;
  f.grant = job.returned;
  std::copy(p.raddrs, p.raddrs + kMaxSegments, f.raddrs);
  std::copy(p.keys, p.keys + kMaxSegments, f.keys);
  size_t hdr = encode_header(f, p.frame->data);
  job.op = frame_op(job.to, p.frame, hdr + p.inline_bytes);
  job.op->xfer = f.xfer;
  job.xfer = f.xfer;
  auto t = std::make_unique<Transfer>();
  t->stream = job.stream;
  t->staged = p.staged;
  t->regs = std::move(p.regs);
  t->charged = p.charged;
  if (t->staged) {
    done_.finished({job.done, job.cookie}, CARAVAN_STATUS_OK);
  } else {
    t->done = job.done;
    t->cookie = job.cookie;
  }
  job.done = nullptr;
  transfers_.emplace(f.xfer, std::move(t));
  p = Prepared{};
  ++counts_.by_request;
}

// Under mu_: a slot's lent buffer that fits makes the job a put; one too
// small is handed back in the job's request to send.
void Engine::take_grant(Stream& s, Job& job) {
  auto it = s.grants.find(job.slot);
  if (it == s.grants.end()) return;
  if (it->second.capacity >= job.total) {
    job.type = Job::kPut;
    job.grant = it->second;
  } else {
    job.returned = it->second.id;
  }
  s.grants.erase(it);
}

// Under mu_: posts the writes of each remote segment to its place in the
// lent buffer (the message's own layout); the notice follows once they
// have all completed.
void Engine::start_put(Job& job, Prepared& p) {
  auto* put = new Put;
  put->job = job;
  put->job.op = nullptr;
  put->p = std::move(p);
  p = Prepared{};
  job.done = nullptr;
  puts_.insert(put);
  const Prepared& q = put->p;
  size_t off = 0, staged_off = 0;
  for (size_t i = 0; i < job.segs.size(); off += job.segs[i].len, ++i) {
    size_t len = job.segs[i].len;
    if (len == 0 || (q.inline_mask >> i & 1)) continue;
    const char* local = q.staged ? q.staged->data + staged_off : static_cast<const char*>(job.segs[i].data);
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
      ctl_.push_back(op);
      ++put->writes_left;
    }
  }
}

// Under mu_, once per write posted (or refused by the transport).
void Engine::write_finished(Op* op, bool ok) {
  Put* put = op->put;
  delete op;
  if (!ok) put->failed = true;
  if (--put->writes_left == 0) finish_put(put);
}

// Under mu_ when done is set (it is reported through done_).
void Engine::release_prepared(Prepared& p, caravan_send_done_fn done, void* cookie, caravan_status status) {
  for (const Registration& r : p.regs)
    if (r.handle) t_.deregister(r);
  tx_pool_.discharge(p.charged);
  tx_pool_.put(p.staged);
  tx_pool_.put(p.frame);
  p = Prepared{};
  done_.finished({done, cookie}, status);
}

// Under mu_: the writes are over. The bytes are in the peer's buffer, so
// the caller's memory is free now, whatever becomes of the notice.
void Engine::finish_put(Put* put) {
  puts_.erase(put);
  std::unique_ptr<Put> owned(put);
  Job& job = put->job;
  Prepared& p = put->p;
  if (closing_) return release_prepared(p, job.done, job.cookie, CARAVAN_STATUS_CLOSED);
  if (!put->failed) {
    Frame f = data_frame(Kind::kPut, job);
    f.grant = job.grant.id;
    f.inline_mask = p.inline_mask;
    size_t hdr = header_size(Kind::kPut, job.segs.size());
    // prepare() left the inline segments after a request to send's header.
    std::memmove(p.frame->data + hdr, p.frame->data + header_size(Kind::kRts, job.segs.size()), p.inline_bytes);
    encode_header(f, p.frame->data);
    ctl_.push_back(frame_op(job.to, p.frame, hdr + p.inline_bytes));
    p.frame = nullptr;
    ++counts_.by_write;
    return release_prepared(p, job.done, job.cookie, CARAVAN_STATUS_OK);
  }
  // The peer never learns of a failed put: it goes again as a request to
  // send that hands the grant back, so the stream does not stall on it.
  log_(CARAVAN_LOG_WARNING, "writing a message into a buffer its peer lent failed; sending it by request to send");
  Stream* s = stream_by_id(job.stream);
  if (!s) return release_prepared(p, job.done, job.cookie, CARAVAN_STATUS_CLOSED);
  auto retry = std::make_unique<Job>(job);
  retry->type = Job::kRts;
  retry->returned = job.grant.id;
  announce(*retry, p);
  out_.push_front(retry.release());
}

Stream* Engine::stream_by_id(uint64_t id) {
  for (auto& [peer, s] : streams_)
    if (s->id == id) return s.get();
  return nullptr;
}

// Under mu_: the transfer's memory is no longer read by anyone.
void Engine::settle(uint64_t xfer, caravan_status status) {
  auto it = transfers_.find(xfer);
  if (it == transfers_.end()) return;
  Transfer& t = *it->second;
  for (const Registration& r : t.regs)
    if (r.handle) t_.deregister(r);
  tx_pool_.discharge(t.charged);
  tx_pool_.put(t.staged);
  done_.finished({t.done, t.cookie}, status);
  transfers_.erase(it);
}

void Engine::settle_transfers(caravan_status status) {
  SendCompletions finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!transfers_.empty()) settle(transfers_.begin()->first, status);
    for (Put* put : puts_) {
      release_prepared(put->p, put->job.done, put->job.cookie, status);
      delete put;
    }
    puts_.clear();
    orphans_.clear();
    finished = done_.take();
  }
  finished.report();
}

// Under mu_, on the progress thread: deregistering here cannot race the
// transport serving a read of that memory, since that happens only inside
// our own calls into it on this thread (or, on hardware, ends with the
// deregistration).
void Engine::withdraw_orphans() {
  if (orphans_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  size_t withdrawn = 0;
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    auto t = transfers_.find(*it);
    if (t == transfers_.end()) {
      it = orphans_.erase(it);
    } else if (now >= t->second->withdraw_at) {
      withdrawn_.insert(*it);
      settle(*it, CARAVAN_STATUS_CLOSED);
      ++withdrawn;
      it = orphans_.erase(it);
    } else {
      ++it;
    }
  }
  if (withdrawn)
    log_(CARAVAN_LOG_INFO, std::to_string(withdrawn) + " transfer(s) to a disconnected peer not read within " +
                               std::to_string(cfg_.orphan_grace_ms) +
                               " ms (orphan grace): their memory is withdrawn and their sends end CLOSED");
}

bool Engine::step_job(Job& job) {
  bool may_wait = !transfers_.empty() || !puts_.empty();
  if (job.type == Job::kPut) {
    Prepared p;
    if (!prepare(job, may_wait, &p)) return false;
    start_put(job, p);
    return true;
  }
  if (job.type == Job::kRts && !job.op) {
    Prepared p;
    if (!prepare(job, may_wait, &p)) return false;
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
        done_.finished({job.done, job.cookie}, CARAVAN_STATUS_OK);
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
