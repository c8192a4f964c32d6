// The sending side's streams and the way into them: connect, disconnect,
// send, and the notices that come back from receivers.
#include "rendezvous/sender.h"

#include <chrono>
#include <cstring>
#include <random>

#include "caravan/plugin/plugin_cxx.hpp"
#include "events/send_checks.h"

namespace caravan::rendezvous {

using plugin::Error;

Sender::Sender(const Config& cfg, const LogFn& log, std::string self_name, RegisteredMemory& mem,
               PostQueue& posts, GrantTable& grants, SendCompletions& done)
    : cfg_(cfg),
      log_(log),
      self_name_(std::move(self_name)),
      mem_(mem),
      posts_(posts),
      grants_(grants),
      done_(done),
      transfers_(cfg, log, mem, done) {
  // Stream ids differ between instances, so a receiver tells a peer that
  // restarted from its previous life.
  std::random_device rd;
  nonce_ = (uint64_t{rd()} << 32) ^ rd() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  nonce_ &= ~uint64_t{0xffffff};  // low bits count this instance's streams
}

Sender::~Sender() { clear(); }

void Sender::queue_hello(Stream& s) {
  Buffer* b = mem_.send_pool().acquire(cfg_.eager_bytes, false);
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

void Sender::connect(uint64_t peer, uint64_t addr) {
  if (closed_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
  if (streams_.count(peer)) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "already connected");
  auto s = std::make_unique<Stream>();
  s->id = nonce_ | next_stream_++;
  s->addr = addr;
  queue_hello(*s);
  streams_.emplace(peer, std::move(s));
}

void Sender::disconnect(uint64_t peer) {
  auto it = streams_.find(peer);
  if (it == streams_.end()) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "not connected");
  uint64_t id = it->second->id;
  streams_.erase(it);
  grants_.forget_offers(id);
  for (auto j = out_.begin(); j != out_.end();) {
    Job* job = *j;
    if (job->stream != id) {
      ++j;
      continue;
    }
    if (job->op) {
      mem_.send_pool().put(job->op->buf);
      delete job->op;
    }
    if (job->xfer) transfers_.settle(job->xfer, CARAVAN_STATUS_CLOSED);  // never announced
    done_.finished(job->ticket, CARAVAN_STATUS_CLOSED);
    delete job;
    j = out_.erase(j);
  }
  // The peer may be reading these right now: give it a grace period to
  // finish (its notice settles them as usual) before withdrawing them.
  transfers_.orphan(id);
}

Sender::Outgoing Sender::outgoing(uint64_t slot, const caravan_segment_v2* segs, size_t n,
                                  SendTicket ticket) const {
  size_t total = plugin::checked_send_bytes(segs, n);
  Outgoing out;
  out.job = std::make_unique<Job>();
  Job& job = *out.job;
  job.segs.assign(segs, segs + n);
  job.total = total;
  job.ticket = ticket;
  job.slot = cfg_.cache_bytes ? slot : 0;
  out.eager = header_size(Kind::kEager, n) + job.total <= cfg_.eager_bytes;
  out.large = !out.eager && cfg_.rma;
  return out;
}

void Sender::stage(Outgoing& out, bool may_wait) {
  if (out.eager) {
    out.frame = mem_.send_pool().acquire(cfg_.eager_bytes, false);
    out.job->copy(0, out.job->total,
                  out.frame->data + header_size(Kind::kEager, out.job->segs.size()));
  } else if (out.large) {
    out.prepared = prepare(out.job->segs, cfg_, mem_, may_wait, &out.p);
  }
}

void Sender::enqueue(uint64_t peer, Outgoing& out) {
  auto it = streams_.find(peer);
  if (closed_ || it == streams_.end()) {
    mem_.send_pool().put(out.frame);
    out.frame = nullptr;
    if (out.prepared) unprepare(out.p, mem_);
    out.prepared = false;
    if (closed_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "not connected");
  }
  Stream& s = *it->second;
  Job& job = *out.job;
  job.stream = s.id;
  job.to = s.addr;
  job.seq = s.next_seq++;
  if (out.eager) {
    encode_header(job.frame(Kind::kEager), out.frame->data);
    job.op = frame_op(s.addr, out.frame, header_size(Kind::kEager, job.segs.size()) + job.total);
    out.frame = nullptr;
    // The caller's memory is free already: its send is over now, once, and
    // neither disconnect() nor close() may report it again.
    done_.finished(job.ticket, CARAVAN_STATUS_OK);
    job.ticket = {};
  } else {
    job.type = cfg_.rma ? Job::kRts : Job::kChunked;
    if (job.slot) take_grant(s, job);
    if (out.prepared && job.type == Job::kPut) {
      start_put(job, out.p);
      out.job.reset();
    } else if (out.prepared) {
      announce(job, out.p);
    }
    out.prepared = false;
  }
  if (out.job) out_.push_back(out.job.release());
}

// A slot's lent buffer that fits makes the job a put; one too small is
// handed back in the job's request to send.
void Sender::take_grant(const Stream& s, Job& job) {
  RemoteGrant g;
  if (!grants_.take_offer(s.id, job.slot, &g)) return;
  if (g.capacity >= job.total) {
    job.type = Job::kPut;
    job.grant = g;
  } else {
    job.returned = g.id;
  }
}

void Sender::on_notice(const Frame& f) {
  if (!transfers_.on_notice(f.seq))
    log_(CARAVAN_LOG_WARNING,
         "dropped a malformed frame from a peer: notice for unknown transfer " +
             std::to_string(f.seq));
}

// A buffer lent to one of our streams: kept for the slot's next message.
void Sender::on_grant(const Frame& f) {
  if (!stream_by_id(f.stream))
    return;  // disconnected since: the peer keeps the buffer until it finalizes
  grants_.offer(f.stream, f.slot, RemoteGrant{f.seq, f.raddrs[0], f.keys[0], f.capacity});
}

Stream* Sender::stream_by_id(uint64_t id) {
  for (auto& [peer, s] : streams_)
    if (s->id == id) return s.get();
  return nullptr;
}

void Sender::close() {
  closed_ = true;
  for (Job* job : out_) {
    if (job->xfer) transfers_.settle(job->xfer, CARAVAN_STATUS_CLOSED);  // never announced
    done_.finished(job->ticket, CARAVAN_STATUS_CLOSED);
    job->ticket = {};
  }
}

void Sender::settle_transfers(caravan_status status) {
  transfers_.settle_all(status);
  for (Put* put : puts_) {
    release(put->p, put->job.ticket, status);
    delete put;
  }
  puts_.clear();
}

void Sender::clear() {
  for (Job* job : out_) {
    delete job->op;
    delete job;
  }
  out_.clear();
  transfers_.clear();
}

}  // namespace caravan::rendezvous
