// The sending side: one stream per connected peer, opened by a hello, and
// its messages in send order as eager frames, requests to send (the
// receiver reads the large segments), writes into a buffer the peer lent
// for the message's slot, or chunk frames where the transport has no
// remote reads.
//
// Under the protocol lock, except outgoing() and stage(), which take none,
// so that copies and registrations of senders on several threads overlap.
#ifndef CARAVAN_RENDEZVOUS_SENDER_H
#define CARAVAN_RENDEZVOUS_SENDER_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "rendezvous/config.h"
#include "rendezvous/frame.h"
#include "rendezvous/grant_table.h"
#include "rendezvous/post_queue.h"
#include "rendezvous/registered_memory.h"
#include "rendezvous/send_completions.h"
#include "rendezvous/send_job.h"
#include "rendezvous/transfers.h"

namespace caravan::rendezvous {

class Sender {
 public:
  Sender(const Config& cfg, const LogFn& log, std::string self_name, RegisteredMemory& mem,
         PostQueue& posts, GrantTable& grants, SendCompletions& done);
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Throw plugin::Error.
  void connect(uint64_t peer, uint64_t addr);
  void disconnect(uint64_t peer);

  // A message on its way from send() to its stream's queue.
  struct Outgoing {
    std::unique_ptr<Job> job;
    bool eager = false;       // fits one frame
    bool large = false;       // goes by request to send or write: prepared before queueing
    Buffer* frame = nullptr;  // eager: the frame, bytes copied in
    Prepared p;               // large: ready when `prepared`
    bool prepared = false;
  };
  // send(), step by step. outgoing() checks the segments (throws).
  Outgoing outgoing(uint64_t slot, const caravan_segment_v2* segs, size_t n,
                    SendTicket ticket) const;
  // Under the lock: may preparing wait for room, since transfers in flight
  // will give some back?
  bool may_wait() const { return !transfers_.empty() || !puts_.empty(); }
  // No lock: copies an eager message into its frame, prepares a large one
  // (when there is room).
  void stage(Outgoing& out, bool may_wait);
  // Under the lock: numbers the message on peer's stream and queues it;
  // throws when the peer is not connected or the van is closing.
  void enqueue(uint64_t peer, Outgoing& out);

  // Progress thread: posts queued messages in order until one must wait.
  void step();
  void withdraw_orphans() { transfers_.withdraw_due(); }
  // Frames addressed to the sending side: a notice that a transfer was
  // read (kFin), a buffer lent for a slot (kGrant).
  void on_notice(const Frame& f);
  void on_grant(const Frame& f);
  // A frame sent, or refused by the transport: its buffer goes back; a
  // lost request to send ends its transfer.
  void frame_done(Op* op, bool ok);
  // A write into a lent buffer completed, or was refused.
  void write_done(Op* op, bool ok);

  // Finalize: close() reports queued sends CLOSED and refuses new ones;
  // settle_transfers() ends every transfer and write with `status`;
  // clear() deletes what is left.
  void close();
  void settle_transfers(caravan_status status);
  void clear();

  size_t by_request() const { return by_request_; }
  size_t by_write() const { return by_write_; }

 private:
  void queue_hello(Stream& s);
  bool step_job(Job& job);
  bool post(Op* op);  // false: the transport pushed back
  void announce(Job& job, Prepared& p);
  void take_grant(const Stream& s, Job& job);
  void start_put(Job& job, Prepared& p);
  void finish_put(Put* put);
  void release(Prepared& p, SendTicket ticket, caravan_status status);
  Stream* stream_by_id(uint64_t id);

  const Config& cfg_;
  LogFn log_;
  std::string self_name_;
  RegisteredMemory& mem_;
  PostQueue& posts_;
  GrantTable& grants_;
  SendCompletions& done_;
  TransferTable transfers_;
  uint64_t nonce_;
  bool closed_ = false;
  uint64_t next_stream_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Stream>> streams_;  // by peer id
  std::deque<Job*> out_;                                           // stream traffic, in send order
  std::unordered_set<Put*> puts_;                                  // writes in flight
  size_t by_request_ = 0;
  size_t by_write_ = 0;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_SENDER_H
