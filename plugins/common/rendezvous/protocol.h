// The message protocol of RDMA-capable vans, written once for all of them.
//
// A message whose frame fits eager_bytes goes in one eager frame. A larger
// one is announced by a request to send that carries its small segments
// inline and says where to read the others: either the caller's own memory,
// registered for this one transfer (zero copy: the send is over once the
// receiver has read it), or a registered staging buffer the segments are
// copied into (over at once). The receiver reads them with remote reads
// into a pooled registered buffer and answers with a completion notice,
// after which the sender deregisters or reuses. Without remote reads the
// message goes as a run of chunk frames instead. A message with a slot hint
// (the engine's key) may instead be written straight into a buffer its
// receiver lent for that slot (the remote-buffer cache, grant_table.h).
//
// Every stream (one per connected peer) numbers its messages; the receiver
// delivers each stream's messages in that order.
//
// Protocol is the thin owner that wires the parts, each in its own files:
//   Sender           sender.h     streams, the send queue, requests to send, writes
//   TransferTable    transfers.h  announced transfers until the receiver's notice
//   Receiver         receiver.h   sources, reads, delivery in stream order
//   Inbox            inbox.h      events waiting for poll(), messages held by the application
//   GrantTable       grant_table.h  the remote-buffer cache, both halves
//   RegisteredMemory registered_memory.h  pools and callers' registrations, bounded
//   PostQueue        post_queue.h operations queued for and posted to the transport
//   SendCompletions  send_completions.h  the one place a send is reported over
//
// Locks. One protocol lock (mu_) covers the Sender, Receiver, TransferTable,
// GrantTable, PostQueue and SendCompletions: a received frame moves state on
// both sides at once (a notice settles a sender's transfer, a release lends
// a receive buffer and queues a frame to send), so they change together.
// The Inbox has its own lock, taken after mu_ when both are held, so poll()
// waits on it alone; RegisteredMemory's pools have theirs, so copying and
// registering in send() need no protocol lock. Sends finished under mu_ are
// queued in the Inbox as SENT events after it is released.
//
// Threads: send/connect/disconnect/release/interrupt from any thread, poll
// from one at a time; complete()
// and pump() from the van's one progress thread, which alone posts to the
// transport, so posting needs no lock of the transport's own.
#ifndef CARAVAN_RENDEZVOUS_PROTOCOL_H
#define CARAVAN_RENDEZVOUS_PROTOCOL_H

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "caravan/plugin/van_v2.h"
#include "rendezvous/config.h"
#include "rendezvous/grant_table.h"
#include "rendezvous/inbox.h"
#include "rendezvous/pool.h"
#include "rendezvous/post_queue.h"
#include "rendezvous/receiver.h"
#include "rendezvous/registered_memory.h"
#include "rendezvous/send_completions.h"
#include "rendezvous/sender.h"
#include "rendezvous/transport.h"

namespace caravan::rendezvous {

class Protocol {
 public:
  Protocol(Transport& t, Config cfg, LogFn log, std::string self_name);
  ~Protocol();
  Protocol(const Protocol&) = delete;
  Protocol& operator=(const Protocol&) = delete;

  // Any thread. Throw plugin::Error.
  void connect(uint64_t peer, uint64_t addr);
  void disconnect(uint64_t peer);
  // slot: nonzero for messages that recur (the engine's key); see above.
  void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segs, size_t n,
            uint64_t send_id);
  caravan_status poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity, size_t* n) {
    return inbox_.poll(timeout_ms, events, capacity, n);
  }
  void interrupt() { inbox_.interrupt(); }
  void release(const caravan_van_message_v2* msg);

  // Progress thread.
  void complete(void* ctx, bool ok, size_t len, const std::string& err);
  bool pump();  // posts what can be posted; true when it did something
  bool busy();  // operations of ours in flight: keep driving progress

  // Finalize: close() once the progress thread is gone (wakes the poller,
  // settles pending sends with CLOSED, posts nothing more); then
  // cancel_receives() and completions until posted() is 0; free() once the
  // transport can no longer touch our buffers (it settles the transfers
  // still waiting for their notice, with CLOSED).
  void close();
  void cancel_receives();
  size_t posted();
  std::string describe_posted();  // e.g. "2 sends, 1 read, 0 writes, 0 receives"
  void free();
  // Settles every transfer: its caller's memory is deregistered and its
  // send reported with `status`. Only once no peer can read it any more.
  void settle_transfers(caravan_status status);
  // All pools together: staging and eager sends with callers' registrations,
  // receive ring and reads, the bounce buffer.
  PoolStats stats();
  Counts counts();
  const Config& config() const { return cfg_; }

 private:
  // Runs step under the protocol lock; the sends it finished are reported
  // once the lock is released, after the progress thread is woken (when
  // `wake`), so that posting starts before the callers hear back.
  template <class Step>
  void locked(Step&& step, bool wake = false) {
    SendCompletions finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      step();
      finished = done_.take();
    }
    if (wake) t_.wake();
    finished.report(inbox_);
  }
  void on_received(const char* buf, size_t len);
  void post_failed(Op* op);

  Transport& t_;
  const Config cfg_;
  LogFn log_;
  RegisteredMemory memory_;
  std::mutex mu_;  // the protocol lock: everything below but the inbox
  SendCompletions done_;
  PostQueue posts_;
  GrantTable grants_;
  Inbox inbox_;
  Sender sender_;
  Receiver receiver_;
  bool closing_ = false;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_PROTOCOL_H
