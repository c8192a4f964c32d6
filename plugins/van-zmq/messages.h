// Per-message bookkeeping of the ZeroMQ van: one record per send in flight
// and one per received message the engine still holds.
#ifndef CARAVAN_VAN_ZMQ_MESSAGES_H
#define CARAVAN_VAN_ZMQ_MESSAGES_H

#include <zmq.h>

#include <atomic>
#include <memory>
#include <string>

#include "caravan/plugin/van_v1.h"

namespace caravan::van_zmq {

// One accepted send. libzmq releases each zero-copy frame on its own
// schedule (an I/O thread once the bytes are written, or whoever destroys
// the pipe when the socket closes), so done must wait for the last of them.
// send() holds one reference of its own while it hands the frames over, so
// done cannot fire half-way through a message.
class SendRecord {
 public:
  // `dropped` is the link's flag: set once the link is closed, after which
  // a frame that zmq lets go may have been discarded rather than written.
  SendRecord(caravan_send_done_fn done, void* cookie,
             std::shared_ptr<const std::atomic<bool>> dropped)
      : done_(done), cookie_(cookie), dropped_(std::move(dropped)) {}

  void add_ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release();
  // The send failed after part of it reached zmq: done reports `status`.
  void fail(caravan_status status) { status_.store(status, std::memory_order_relaxed); }
  // The send was refused as a whole: the ABI forbids calling done then.
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
  caravan_send_done_fn done_;
  void* cookie_;
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

  zmq_msg_t frames[CARAVAN_VAN_MAX_SEGMENTS_V1];
  size_t num_frames = 0;  // frames holding data; only these are closed
  std::string peer;
};

}  // namespace caravan::van_zmq

#endif  // CARAVAN_VAN_ZMQ_MESSAGES_H
