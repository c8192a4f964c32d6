// The receiving side: a source per peer stream that said hello, and its
// messages assembled from an eager frame, chunks, remote reads after a
// request to send, or a write into a buffer lent for the message's slot
// (kPut), then handed to the inbox in each stream's order even when a small
// message overtakes a large one still being read.
//
// The application may hold received messages as long as it likes (a server
// keeps a worker's push as its running sum until the other workers' pushes
// come). When those held messages fill the receive pool, a request to send
// is read through one bounce buffer into ordinary memory instead of waiting
// for a release that may depend on that very message.
//
// Under the protocol lock; the inbox it fills has its own.
#ifndef CARAVAN_RENDEZVOUS_RECEIVER_H
#define CARAVAN_RENDEZVOUS_RECEIVER_H

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/config.h"
#include "rendezvous/frame.h"
#include "rendezvous/grant_table.h"
#include "rendezvous/inbox.h"
#include "rendezvous/message.h"
#include "rendezvous/post_queue.h"
#include "rendezvous/registered_memory.h"
#include "rendezvous/transport.h"

namespace caravan::rendezvous {

class Receiver {
 public:
  Receiver(Transport& t, const Config& cfg, LogFn log, RegisteredMemory& mem, PostQueue& posts,
           GrantTable& grants, Inbox& inbox);
  ~Receiver();
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // The receive ring, queued once, at the first pump().
  void post_receives();
  // A received frame checked; false (logged, naming the peer when its
  // stream is known) when it is malformed.
  bool parse(const char* buf, size_t len, Frame* f);
  // A frame addressed to the receiving side: hello, eager, request to
  // send, chunk, or write notice. buf/len are the frame as received.
  void on_frame(const Frame& f, const char* buf, size_t len);
  // Requests to send waiting for a buffer get one (or the bounce buffer).
  void start_reads();
  // A remote read completed, or was refused by the transport.
  void read_done(Op* op, bool ok);
  // A receive of the ring refused by the transport, or completed after
  // close: its buffer goes back.
  void drop_receive(Op* op);
  // The application released m (taken back from the inbox; the caller
  // deletes it). True when the progress thread has something new to post.
  bool released(InMsg* m);
  void clear();

 private:
  void drop(const std::string& peer, const std::string& why);
  void on_hello(const Frame& f);
  void on_put(const Frame& f, Source& src, InMsg* m);
  bool lend(InMsg* m);
  void take_back(const Frame& f);
  void queue_read(InMsg* m, Buffer* into, const Piece& piece);
  void read_message_done(InMsg* m, bool ok);
  void deliver(Source& src);

  Transport& t_;
  const Config& cfg_;
  LogFn log_;
  RegisteredMemory& mem_;
  PostQueue& posts_;
  GrantTable& grants_;
  Inbox& inbox_;
  bool ring_queued_ = false;
  size_t pooled_msgs_ = 0;     // received messages holding a receive pool buffer
  Buffer* bounce_ = nullptr;   // registered at its first use, kept until clear()
  InMsg* bouncing_ = nullptr;  // the one message being read through bounce_
  std::unordered_map<uint64_t, std::unique_ptr<Source>> sources_;  // by stream id
  std::unordered_map<uint64_t, std::vector<std::string>> early_;   // frames before hello
  static constexpr size_t kMaxEarlyFrames = 4096;
  std::deque<InMsg*> rts_wait_;    // requests waiting for a receive buffer
  std::vector<InMsg*> delivered_;  // handed to the inbox at the end of deliver()
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_RECEIVER_H
