// One push_pull (broadcast, reduce-scatter, allgather, all-to-all) in progress: which tensor, the
// caller's buffer, and the flight of each of its partitions (partition_flight.h). Its state is
// private and guarded by one mutex, never held while the engine calls out (the van, a handler, an
// observer). The caller's thread polls or waits; the receiving thread and the sending threads
// report each partition's events.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/worker/partition_flight.h"
#include "engine/worker/tensor_plan.h"
#include "engine/worker/worker.h"

namespace caravan {

class Operation final : public Worker::Op {
 public:
  using Clock = std::chrono::steady_clock;
  // `out`: where an all-to-all's received blocks go (its sent ones are read
  // from `data`); null for every other kind, whose results land in `data`.
  Operation(TensorPlan& plan, char* data, int root, int my_rank, int priority, uint64_t round,
            char* out = nullptr);

  TensorPlan& tensor() const { return plan_; }
  const Partition& partition(size_t index) const { return plan_.partitions[index]; }
  size_t partitions() const { return flights_.size(); }
  char* data() const { return data_; }
  // Where partition `index`'s values are read from or its answer goes.
  char* at(size_t index) const;
  int root() const { return root_; }  // as Worker::submit took it
  OpKind kind() const { return plan_.kind; }
  // Whether this worker sends partition `index`'s values, and gets values
  // back. A push_pull does both. A broadcast's root sends its values and
  // gets none back; the others send none and get the root's. An
  // allgather is a broadcast of each partition from the rank whose shard
  // holds it; a reduce-scatter, a push_pull of each partition whose sum
  // only that rank gets back; an all-to-all, a broadcast of each block from
  // its owner to its target alone.
  bool sends_values(size_t index) const;
  bool gets_values(size_t index) const;
  // The rank whose values partition `index` relays (a broadcast's root, or
  // the owner of an allgather's shard or an all-to-all's block); kSum where
  // it is summed.
  int source_of(size_t index) const;
  const char* what() const { return kind_name(plan_.kind); }
  int priority() const { return priority_; }
  uint64_t round() const { return round_; }  // of its tensor: with the key, the compressors' seed
  Clock::time_point submitted() const { return submitted_; }
  int64_t submitted_us() const { return submitted_us_; }  // Timeline::now_us then

  // Set once at submission, before any event: told after the operation
  // ends (on_done), and of each partition whose result is in the buffer
  // (stored, for a staged operation); either may be empty.
  std::function<void()> on_done;
  std::function<void(size_t index)> stored;
  // The timeline's step of its tensor, and whether that step is traced;
  // set once at submission.
  int step = -1;
  bool traced = false;

  // ---- the partitions' events (the sending and receiving threads) ----
  // The send queue hands partition `index` out; false when its caller has
  // given up (then it is not sent: end_unsent).
  bool begin_send(size_t index);
  // Whether the van was lent the answer's place; false when the caller
  // gave up meanwhile (the lend, if made, is the sender's to take back).
  bool on_wire(size_t index, bool lent);
  PartitionFlight::Then sent(size_t index, bool ok);
  PartitionFlight::Then answered(size_t index, KVMessage& answer);
  std::unique_ptr<KVMessage> take_answer(size_t index);
  // Records the operation's first failure (later ones are not news).
  void fail(int code, const std::string& why);
  // Partition `index` is over (stored, ended or never sent); a second call
  // for it is nothing. True for the call that ends the last one: the
  // operation is then the caller's to complete().
  bool finish(size_t index);
  // Whether the van still holds a lend of `index`'s place; clears it
  // (the caller settles it: used, or taken back).
  bool settle_lend(size_t index);
  // Clears and returns the keys of every lend not yet settled.
  std::vector<uint64_t> take_lends();
  // The caller gave up waiting (wait timed out): answers from now on are
  // counted, not stored.
  bool abandoned() const;
  // Each partition's moments, for the timeline.
  void mark_queued(size_t index, int64_t us);
  PartitionFlight::Moments moments(size_t index) const;

  // ---- the end ----
  // Done: poll() and wait() see the result; wakes the waiters.
  void complete();
  // Succeeded so far (and, once done, in the end).
  bool ok() const;

  // ---- the caller's thread ----
  // 1 done, 0 pending, or the negative error (message in *error).
  int poll(std::string* error) const;
  // Blocks until done or `timeout`; 0, the negative error, or
  // CARAVAN_ERR_TIMEOUT (then the operation is abandoned, and *error names
  // what it waited for through `describe`: server rank -> partitions).
  int wait(std::chrono::seconds timeout, std::string* error,
           const std::function<std::string(const std::map<int, int>&)>& describe);

 private:
  TensorPlan& plan_;
  char* const data_;
  char* const out_;
  const int root_;
  const int my_rank_;
  const int priority_;
  const uint64_t round_;
  const Clock::time_point submitted_ = Clock::now();
  const int64_t submitted_us_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<PartitionFlight> flights_;
  std::vector<bool> counted_;  // finish() was called for it
  size_t open_;                // partitions not finished
  int code_ = 0;
  std::string error_;
  bool done_ = false;
  std::atomic<bool> finished_{false};  // done_, read without the lock by wait()'s polling
  bool abandoned_ = false;
};

}  // namespace caravan
