// The operations between the protocol and its transport: those queued to
// be posted (receives, reads, writes and notices, which never wait on the
// send pool, unlike the sending side's queue of messages) and those posted
// and not yet complete.
//
// Under the protocol lock; posting happens on the progress thread alone,
// so the transport needs no lock of its own for it.
#ifndef CARAVAN_RENDEZVOUS_POST_QUEUE_H
#define CARAVAN_RENDEZVOUS_POST_QUEUE_H

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_set>

#include "rendezvous/config.h"
#include "rendezvous/op.h"
#include "rendezvous/transport.h"

namespace caravan::rendezvous {

class PostQueue {
 public:
  PostQueue(Transport& t, LogFn log);
  PostQueue(const PostQueue&) = delete;
  PostQueue& operator=(const PostQueue&) = delete;

  // Goes out, in order, at the next post_queued().
  void queue(Op* op) { queued_.push_back(op); }

  enum class Result { kPosted, kAgain, kFailed };
  // Hands op to the transport. kAgain: not taken, try later. kFailed
  // (logged): refused for good; the caller finishes op as failed.
  Result post(Op* op);
  // Posts queued operations until the transport pushes back; each one it
  // refuses for good goes to failed(op), which may queue more.
  template <class Failed>
  void post_queued(Failed&& failed) {
    while (!queued_.empty()) {
      Op* op = queued_.front();
      Result r = post(op);
      if (r == Result::kAgain) return;
      queued_.pop_front();
      if (r == Result::kFailed) failed(op);
    }
  }
  // Its completion came: false (logged) when op is not in flight.
  bool completed(Op* op);

  // A round of pump(): did the transport take (or refuse) anything since?
  void start_round() { posted_any_ = false; }
  bool posted_this_round() const { return posted_any_; }

  // Operations queued, or posted sends, reads and writes: keep driving progress.
  bool busy() const { return in_flight_ > 0 || !queued_.empty(); }
  size_t posted() const { return posted_.size(); }
  std::string describe_posted() const;  // e.g. "2 sends, 1 read, 0 writes, 0 receives"
  void cancel_receives();
  // Deletes every operation, queued or posted: the transport can touch none.
  void clear();

 private:
  Transport& t_;
  LogFn log_;
  bool posted_any_ = false;
  size_t in_flight_ = 0;  // posted sends, reads and writes
  std::deque<Op*> queued_;
  std::unordered_set<Op*> posted_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_POST_QUEUE_H
