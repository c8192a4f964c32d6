// Per-message bookkeeping of the ZeroMQ van: one record per send in flight,
// where finished sends wait for poll(), and one record per received message
// the engine still holds.
#ifndef CARAVAN_VAN_ZMQ_MESSAGES_H
#define CARAVAN_VAN_ZMQ_MESSAGES_H

#include <zmq.h>

#include <atomic>
#include <memory>
#include <string>

#include "caravan/plugin/van_v2.h"
#include "events/sent_events.h"

namespace caravan::van_zmq {

// Finished sends, reported from zmq's I/O threads (or from send() itself),
// waiting for poll(); and the eventfd that wakes a poll() asleep in
// zmq_poll, which polls it beside the ROUTER socket.
class Completions {
 public:
  Completions();  // throws plugin::Error when no eventfd can be made
  ~Completions();
  Completions(const Completions&) = delete;
  Completions& operator=(const Completions&) = delete;

  void sent(uint64_t send_id, caravan_status status) {
    if (events_.push(send_id, status)) wake();
  }
  size_t take(caravan_van_event_v2* out, size_t capacity) { return events_.take(out, capacity); }
  void wake();   // makes the fd readable
  void drain();  // makes it unreadable again
  int fd() const { return fd_; }

 private:
  plugin::SentEvents events_;
  int fd_ = -1;
};

// One accepted send. libzmq releases each zero-copy frame on its own
// schedule (an I/O thread once the bytes are written, or whoever destroys
// the pipe when the socket closes), so its event must wait for the last of them.
// send() holds one reference of its own while it hands the frames over, so
// the send cannot end half-way through a message.
class SendRecord {
 public:
  // `dropped` is the link's flag: set once the link is closed, after which
  // a frame that zmq lets go may have been discarded rather than written.
  SendRecord(Completions& completions, uint64_t send_id,
             std::shared_ptr<const std::atomic<bool>> dropped)
      : completions_(completions), send_id_(send_id), dropped_(std::move(dropped)) {}

  void add_ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();
  // The send failed after part of it reached zmq: its event says `status`.
  void fail(caravan_status status) { status_.store(status, std::memory_order_relaxed); }
  // The send was refused as a whole: the ABI forbids an event then.
  void cancel() { cancelled_ = true; }

  // zmq_free_fn for zero-copy frames; `hint` is the record.
  static void free_frame(void* data, void* hint);
  // Called before the frames go to zmq_msg_send. libzmq passes the record
  // to the I/O thread that calls free_frame through its own lock-free
  // queues, which ThreadSanitizer cannot see (libzmq is not instrumented):
  // under it, this and free_frame declare that hand-over. Nothing otherwise.
  void handed_to_zmq();

 private:
  std::atomic<int> refs_{1};
  std::atomic<caravan_status> status_{CARAVAN_STATUS_OK};
  bool cancelled_ = false;  // written before send() drops its own reference
  Completions& completions_;
  const uint64_t send_id_;
  std::shared_ptr<const std::atomic<bool>> dropped_;
};

// A received message: the frames stay inside zmq's messages (no copy), so
// the zmq_msg_t must not move until release(); hence a heap record.
struct RecvRecord {
  RecvRecord() = default;
  RecvRecord(const RecvRecord&) = delete;
  RecvRecord& operator=(const RecvRecord&) = delete;
  ~RecvRecord() {
    for (size_t i = 0; i < num_frames; ++i) zmq_msg_close(&frames[i]);
  }

  zmq_msg_t frames[CARAVAN_VAN_MAX_SEGMENTS_V2];
  size_t num_frames = 0;  // frames holding data; only these are closed
  std::string peer;
};

}  // namespace caravan::van_zmq

#endif  // CARAVAN_VAN_ZMQ_MESSAGES_H
