// A key's round on a summation server: which workers have pushed in it,
// who waits for its answer, and what it has gathered (the sum, or a
// broadcast's root values). Every kind of key (key_kinds.h) goes through
// it, so one worker pushes once per round and a round rolls over the
// same way whatever the key does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ipc/messages.h"
#include "engine/kv/kv_message.h"

namespace caravan {

// Where a push's values lie and its answer goes: a worker's shared-memory
// slot (BYTEPS_ENABLE_IPC), or, with no place, the van.
struct Source {
  std::optional<ipc::SlotDescriptor> place;
  Blob slot;  // the slot's memory, when there is a place
};

struct Waiter {
  wire::Header head;  // the request, to answer
  Source source;
};

class Round {
 public:
  explicit Round(int num_workers) : pushed_(static_cast<size_t>(num_workers), false) {}

  // Why worker `rank` may not push in this round ("worker 1 pushed key 5
  // twice in one round"; `did` says what it did: "pushed"), or "".
  std::string twice(int rank, uint64_t key, const char* did) const;
  // Worker `rank`'s push is in the round; it waits for the answer.
  void join(int rank, Waiter w);
  bool empty() const { return waiting_.empty(); }
  bool complete() const { return waiting_.size() == pushed_.size(); }
  const std::vector<Waiter>& waiting() const { return waiting_; }
  // Rounds of this key finished before this one.
  uint64_t number() const { return number_; }

  // The round is over: it is handed back, and this one becomes the next.
  Round roll_over();
  // Its waiters, handed back to be told why (the key is refused from now
  // on); the round starts afresh.
  std::vector<Waiter> clear();

  Blob values;          // the sum (broadcast: the root's values), alive until every answer went
  int root = -1;        // a broadcast's root rank
  bool traced = false;  // a step the timeline keeps (BYTEPS_TRACE_ON)

 private:
  std::vector<bool> pushed_;  // by worker rank
  std::vector<Waiter> waiting_;
  uint64_t number_ = 0;
};

}  // namespace caravan
