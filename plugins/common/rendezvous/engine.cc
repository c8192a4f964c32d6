#include "rendezvous/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

using plugin::Error;

enum class OpKind { kSend, kRecv, kRead };

struct Op {
  alignas(16) unsigned char scratch[64];  // the transport's, while posted
  OpKind kind = OpKind::kSend;
  Buffer* buf = nullptr;
  size_t len = 0;
  uint64_t addr = 0;
  InMsg* msg = nullptr;  // kRead
  size_t offset = 0;
  uint64_t raddr = 0;
  uint64_t key = 0;
};

struct Source {
  uint64_t addr = 0;
  std::string peer;
  uint64_t next_seq = 0;
  std::map<uint64_t, InMsg*> pending;  // arrived, by seq, not yet delivered
};

struct InMsg {
  Source* src = nullptr;
  uint64_t seq = 0;
  size_t nseg = 0;
  uint64_t lens[kMaxSegments] = {};
  uint64_t total = 0;
  std::unique_ptr<char[]> heap;
  Buffer* pooled = nullptr;
  char* data = nullptr;
  size_t filled = 0;  // chunks: bytes arrived
  size_t reads_left = 0;
  bool ready = false;
  bool failed = false;
  uint64_t raddr = 0, key = 0, xfer = 0;
};

struct Stream {
  uint64_t id = 0;
  uint64_t addr = 0;
  uint64_t next_seq = 0;
};

struct Job {
  enum Type { kFrame, kStage, kChunked } type = kFrame;
  uint64_t stream = 0;
  uint64_t to = 0;
  Op* op = nullptr;  // a frame built and not yet posted
  uint64_t seq = 0;
  std::vector<caravan_segment_v1> segs;
  uint64_t total = 0;
  size_t offset = 0;
  caravan_send_done_fn done = nullptr;
  void* cookie = nullptr;
};

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

namespace {

// Large enough that reading through it costs few round trips, small next
// to the receive pool it is taken from.
size_t bounce_size(const Config& cfg) {
  return BufferPool::class_of(std::max(cfg.eager_bytes, std::min(cfg.read_chunk, cfg.max_registered_bytes / 16)));
}

}  // namespace

// Sending and receiving get half the limit each: a sender waiting for
// completion notices then never starves the receive side those notices
// depend on. The bounce buffer comes out of the receiving half.
Engine::Engine(Transport& t, Config cfg, LogFn log, std::string self_name)
    : t_(t),
      cfg_(cfg),
      log_(std::move(log)),
      self_name_(std::move(self_name)),
      bounce_bytes_(bounce_size(cfg)),
      tx_pool_([this](void* p, size_t n) { return t_.register_memory(p, n); },
               [this](const Registration& r) { t_.deregister(r); }, cfg.max_registered_bytes / 2),
      rx_pool_([this](void* p, size_t n) { return t_.register_memory(p, n); },
               [this](const Registration& r) { t_.deregister(r); },
               cfg.max_registered_bytes / 2 > bounce_bytes_ ? cfg.max_registered_bytes / 2 - bounce_bytes_ : 0),
      bounce_pool_([this](void* p, size_t n) { return t_.register_memory(p, n); },
                   [this](const Registration& r) { t_.deregister(r); }, bounce_bytes_) {
  std::random_device rd;
  nonce_ = (uint64_t{rd()} << 32) ^ rd() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  nonce_ &= ~uint64_t{0xffffff};  // low bits count this instance's streams
}

Engine::~Engine() { free(); }

PoolStats Engine::stats() {
  PoolStats a = tx_pool_.stats();
  for (const PoolStats& b : {rx_pool_.stats(), bounce_pool_.stats()}) {
    a.registered_bytes += b.registered_bytes;
    a.peak_bytes += b.peak_bytes;
    a.limit_bytes += b.limit_bytes;
    a.buffers += b.buffers;
    a.registrations += b.registrations;
  }
  return a;
}

Op* Engine::frame_op(uint64_t to, Buffer* b, size_t len) {
  auto* op = new Op;
  op->kind = OpKind::kSend;
  op->buf = b;
  op->len = len;
  op->addr = to;
  return op;
}

void Engine::queue_hello(Stream& s) {
  Buffer* b = tx_pool_.acquire(cfg_.eager_bytes, false);
  Frame f;
  f.kind = Kind::kHello;
  f.stream = s.id;
  size_t hdr = encode_header(f, b->data);
  std::memcpy(b->data + hdr, self_name_.data(), self_name_.size());
  auto* job = new Job;
  job->stream = s.id;
  job->op = frame_op(s.addr, b, hdr + self_name_.size());
  out_.push_back(job);
}

void Engine::connect(uint64_t peer, uint64_t addr) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
    if (streams_.count(peer)) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "already connected");
    auto s = std::make_unique<Stream>();
    s->id = nonce_ | next_stream_++;
    s->addr = addr;
    queue_hello(*s);
    streams_.emplace(peer, std::move(s));
  }
  t_.wake();
}

void Engine::disconnect(uint64_t peer) {
  Dones dones;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(peer);
    if (it == streams_.end()) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "not connected");
    uint64_t id = it->second->id;
    streams_.erase(it);
    for (auto j = out_.begin(); j != out_.end();) {
      Job* job = *j;
      if (job->stream != id) {
        ++j;
        continue;
      }
      if (job->op) {
        tx_pool_.put(job->op->buf);
        delete job->op;
      }
      if (job->done && job->type != Job::kFrame) dones.push_back({job->done, job->cookie, CARAVAN_STATUS_CLOSED});
      delete job;
      j = out_.erase(j);
    }
  }
  run_dones(dones);
}

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

bool Engine::post(Op* op) {
  std::string err;
  Transport::Post r = Transport::Post::kFailed;
  switch (op->kind) {
    case OpKind::kSend:
      r = t_.post_send(op->addr, op->buf->data, op->len, op->buf->reg.desc, op, &err);
      break;
    case OpKind::kRecv:
      r = t_.post_recv(op->buf->data, cfg_.eager_bytes, op->buf->reg.desc, op, &err);
      break;
    case OpKind::kRead: {
      // A bounce buffer holds one piece at a time; a pooled one the whole message.
      char* local = op->buf == bounce_ ? op->buf->data : op->buf->data + op->offset;
      r = t_.post_read(op->addr, local, op->len, op->buf->reg.desc, op->raddr, op->key, op, &err);
      break;
    }
      break;
  }
  if (r == Transport::Post::kAgain) return false;
  posted_any_ = true;
  if (r == Transport::Post::kPosted) {
    posted_.insert(op);
    if (op->kind != OpKind::kRecv) ++in_flight_;
    return true;
  }
  log_(CARAVAN_LOG_ERROR, "posting failed: " + err);
  if (op->kind == OpKind::kRead) {
    read_finished(op, false);
  } else {
    (op->kind == OpKind::kSend ? tx_pool_ : rx_pool_).put(op->buf);
    delete op;
  }
  return true;
}

void Engine::complete(void* ctx, bool ok, size_t len, const std::string& err) {
  auto* op = static_cast<Op*>(ctx);
  std::lock_guard<std::mutex> lock(mu_);
  if (!posted_.erase(op)) {
    log_(CARAVAN_LOG_ERROR, "completion for an operation not in flight");
    return;
  }
  switch (op->kind) {
    case OpKind::kSend:
      --in_flight_;
      if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a send failed: " + err);
      tx_pool_.put(op->buf);
      delete op;
      return;
    case OpKind::kRead: {
      --in_flight_;
      if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a remote read from " + op->msg->src->peer + " failed: " + err);
      read_finished(op, ok);
      return;
    }
    case OpKind::kRecv:
      if (closing_) {
        rx_pool_.put(op->buf);
        delete op;
        return;
      }
      if (ok) on_frame(op->buf->data, len);
      else log_(CARAVAN_LOG_WARNING, "a receive failed: " + err);
      ctl_.push_back(op);  // repost the same buffer
      return;
  }
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

bool Engine::pump() {
  Dones dones;
  bool did;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    posted_any_ = false;
    if (!rx_posted_) {
      rx_posted_ = true;
      for (size_t i = 0; i < cfg_.rx_depth; ++i) {
        auto* op = new Op;
        op->kind = OpKind::kRecv;
        op->buf = rx_pool_.acquire(cfg_.eager_bytes, false);
        ctl_.push_back(op);
      }
    }
    start_reads();
    while (!ctl_.empty() && post(ctl_.front())) ctl_.pop_front();
    while (!out_.empty() && step_job(*out_.front(), dones)) {
      delete out_.front();
      out_.pop_front();
    }
    did = posted_any_ || !dones.empty();
  }
  run_dones(dones);
  return did;
}

bool Engine::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_ > 0 || !ctl_.empty();
}

void Engine::run_dones(Dones& dones) {
  for (auto& d : dones)
    if (d.fn) d.fn(d.cookie, d.status);
  dones.clear();
}

void Engine::close() {
  Dones dones;
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    ready_cv_.notify_all();
    ready_cv_.wait(lock, [&] { return in_recv_ == 0; });
    for (Job* job : out_)
      if (job->done) {
        dones.push_back({job->done, job->cookie, CARAVAN_STATUS_CLOSED});
        job->done = nullptr;
      }
  }
  run_dones(dones);
}

void Engine::cancel_receives() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Op* op : posted_)
    if (op->kind == OpKind::kRecv) t_.cancel(op);
}

size_t Engine::posted() {
  std::lock_guard<std::mutex> lock(mu_);
  return posted_.size();
}

std::string Engine::describe_posted() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n[3] = {};
  for (Op* op : posted_) ++n[static_cast<int>(op->kind)];
  auto count = [](size_t k, const char* what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  return count(n[0], "send") + ", " + count(n[2], "read") + ", " + count(n[1], "receive");
}

void Engine::free() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Op* op : posted_) delete op;
  posted_.clear();
  for (Op* op : ctl_) delete op;
  ctl_.clear();
  for (Job* job : out_) {
    delete job->op;
    delete job;
  }
  out_.clear();
  for (InMsg* m : ready_) delete m;
  ready_.clear();
  for (InMsg* m : held_) delete m;
  held_.clear();
  for (auto& s : sources_)
    for (auto& p : s.second->pending) delete p.second;
  sources_.clear();
  early_.clear();
  rts_wait_.clear();
  staged_.clear();
  bounce_ = nullptr;
  bouncing_ = nullptr;
  tx_pool_.clear();
  rx_pool_.clear();
  bounce_pool_.clear();
}

}  // namespace caravan::rendezvous
