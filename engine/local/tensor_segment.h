// One tensor's shared memory on one machine: a slot per local rank for its
// contribution (slot 0 receives the machine's sum) and the counters saying
// which round each slot holds.
//
// Rounds: a local rank's n-th push_pull of the tensor is its round n-1.
// Local rank r > 0 writes its slot, then sets contributed(r) to n. Local
// rank 0 sums once every contributed(r) reached n, and sets results() to n
// when slot 0 holds the sum of round n-1. A local rank starts round n only
// after it copied out result n-1, and local rank 0 writes slot 0 for round
// n only after everyone contributed round n, so no slot is ever written
// while someone still needs what it holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/ipc/shared_segment.h"
#include "engine/local/local_group.h"

namespace caravan {

struct TensorBlock;

class TensorSegment {
 public:
  // Maps the segment of tensor `name`, making it when this process is the
  // first of the machine to use the tensor. Throws MISMATCH (and refuses
  // the tensor for every local rank) when another local rank uses it with
  // another count or dtype.
  TensorSegment(const LocalGroup& group, const std::string& name, size_t count, int dtype);

  char* slot(int local_rank) const;
  size_t bytes() const { return bytes_; }

  uint64_t contributed(int local_rank) const;
  // `root`: the broadcast's root rank, or -1 for a push_pull, read back
  // with root_of() once contributed() shows the round.
  void contribute(int local_rank, uint64_t rounds, int root);
  int root_of(int local_rank) const;

  // Device tensors summed on the device: local rank r's device buffer and
  // event for this tensor, as IPC handles, set once. device_handles() is
  // false until local rank r has set them.
  void set_device_handles(int local_rank, const std::string& memory, const std::string& event);
  bool device_handles(int local_rank, std::string* memory, std::string* event) const;

  uint64_t results() const;
  // The code of the last published result, with its message in *error.
  int result(std::string* error) const;
  void publish_result(uint64_t rounds, int code, const std::string& error);

  // Once refused, every use of the tensor by any local rank fails so.
  bool refused(int* code, std::string* message) const;
  void refuse(int code, const std::string& message);

 private:
  TensorBlock* block() const;
  const LocalGroup& group_;
  size_t bytes_;
  std::string segment_name_;
  SharedSegment segment_;
};

// Removes this machine's tensor segments left by earlier runs of the job
// whose processes are gone (a run killed before it could clean up).
void remove_dead_runs_segments(const LocalGroup& group);

}  // namespace caravan
