#include "rendezvous/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "caravan/plugin/plugin_cxx.hpp"
#include "rendezvous/engine_parts.h"

namespace caravan::rendezvous {

using plugin::Error;

namespace {

// Large enough that reading through it costs few round trips, small next
// to the receive pool it is taken from.
size_t bounce_size(const Config& cfg) {
  return BufferPool::class_of(std::max(cfg.eager_bytes, std::min(cfg.read_chunk, cfg.max_registered_bytes / 16)));
}

}  // namespace

size_t cache_bytes_param(int64_t value, size_t max_registered_bytes) {
  if (value < 0 || static_cast<uint64_t>(value) > max_registered_bytes / 4)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter CACHE_BYTES must be 0 to a quarter of MAX_REGISTERED_BYTES (" +
                    std::to_string(max_registered_bytes / 4) + "), not " + std::to_string(value));
  return static_cast<size_t>(value);
}

std::string describe(const Counts& c) {
  return "large messages: " + std::to_string(c.by_request) + " by request to send, " + std::to_string(c.by_write) +
         " written into buffers peers lent; " + std::to_string(c.lent) + " buffers lent to peers (" +
         std::to_string(c.lent_bytes) + " bytes)";
}

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
    a.caller_registrations += b.caller_registrations;
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
  SendCompletions finished;
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
      if (job->xfer) settle(job->xfer, CARAVAN_STATUS_CLOSED);  // never announced
      done_.finished({job->done, job->cookie}, CARAVAN_STATUS_CLOSED);
      delete job;
      j = out_.erase(j);
    }
    // The peer may be reading these right now: give it a grace period to
    // finish (its notice settles them as usual) before withdrawing them.
    auto withdraw_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(cfg_.orphan_grace_ms);
    for (auto& [xfer, t] : transfers_) {
      if (t->stream != id || t->regs.empty() || t->orphan) continue;
      t->orphan = true;
      t->withdraw_at = withdraw_at;
      orphans_.push_back(xfer);
    }
    finished = done_.take();
  }
  t_.wake();
  finished.report();
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
    case OpKind::kWrite:
      r = t_.post_write(op->addr, op->local, op->len, op->desc, op->raddr, op->key, op, &err);
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
  } else if (op->kind == OpKind::kWrite) {
    write_finished(op, false);
  } else {
    if (op->xfer) settle(op->xfer, CARAVAN_STATUS_IO);  // the peer never heard of it
    (op->kind == OpKind::kSend ? tx_pool_ : rx_pool_).put(op->buf);
    delete op;
  }
  return true;
}

void Engine::complete(void* ctx, bool ok, size_t len, const std::string& err) {
  SendCompletions finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    complete_locked(static_cast<Op*>(ctx), ok, len, err);
    finished = done_.take();
  }
  finished.report();
}

void Engine::complete_locked(Op* op, bool ok, size_t len, const std::string& err) {
  if (!posted_.erase(op)) {
    log_(CARAVAN_LOG_ERROR, "completion for an operation not in flight");
    return;
  }
  switch (op->kind) {
    case OpKind::kSend:
      --in_flight_;
      if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a send failed: " + err);
      if (!ok && op->xfer) settle(op->xfer, CARAVAN_STATUS_IO);  // its request to send was lost
      tx_pool_.put(op->buf);
      delete op;
      return;
    case OpKind::kRead: {
      --in_flight_;
      if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a remote read from " + op->msg->src->peer + " failed: " + err);
      read_finished(op, ok);
      return;
    }
    case OpKind::kWrite:
      --in_flight_;
      if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a remote write failed: " + err);
      write_finished(op, ok);
      return;
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

bool Engine::pump() {
  SendCompletions finished;
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
    withdraw_orphans();
    start_reads();
    while (!ctl_.empty() && post(ctl_.front())) ctl_.pop_front();
    while (!out_.empty() && step_job(*out_.front())) {
      delete out_.front();
      out_.pop_front();
    }
    finished = done_.take();
    did = posted_any_ || !finished.empty();
  }
  finished.report();
  return did;
}

bool Engine::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_ > 0 || !ctl_.empty();
}

void Engine::close() {
  SendCompletions finished;
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    ready_cv_.notify_all();
    ready_cv_.wait(lock, [&] { return in_recv_ == 0; });
    for (Job* job : out_) {
      if (job->xfer) settle(job->xfer, CARAVAN_STATUS_CLOSED);  // never announced
      done_.finished({job->done, job->cookie}, CARAVAN_STATUS_CLOSED);
      job->done = nullptr;
    }
    finished = done_.take();
  }
  finished.report();
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
  size_t n[4] = {};
  for (Op* op : posted_) ++n[static_cast<int>(op->kind)];
  auto count = [](size_t k, const char* what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  return count(n[0], "send") + ", " + count(n[2], "read") + ", " + count(n[3], "write") + ", " +
         count(n[1], "receive");
}

void Engine::free() {
  settle_transfers(CARAVAN_STATUS_CLOSED);
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
  withdrawn_.clear();
  grants_.clear();
  grant_of_.clear();
  bounce_ = nullptr;
  bouncing_ = nullptr;
  tx_pool_.clear();
  rx_pool_.clear();
  bounce_pool_.clear();
}

}  // namespace caravan::rendezvous
