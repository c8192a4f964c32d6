// This process's side of push_pull, whichever way its sums are made:
// through the servers, in this process alone (a single worker), or with the
// other worker processes of this machine first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace caravan {

// Worker::submit's `root` for a push_pull: every worker gets the sum.
constexpr int kSum = -1;

class Worker {
 public:
  // A push_pull in progress; what it holds is the Worker's business.
  class Op {
   public:
    virtual ~Op() = default;
  };

  virtual ~Worker() = default;

  // Starts a push_pull (root kSum) or a broadcast from worker rank `root`
  // (0..size()-1, checked by the caller); throws caravan::Error for misuse
  // found up front.
  virtual std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                                     int priority, int root) = 0;
  // 1 done, 0 pending, or the negative error (message in *error).
  virtual int poll(Op& op, std::string* error) = 0;
  // Blocks until done or CARAVAN_OP_TIMEOUT; 0 or the negative error.
  virtual int wait(Op& op, std::string* error) = 0;
  // Waits for the operations in flight, then leaves the job; throws
  // caravan::Error (the process is out of the job either way).
  virtual void leave() = 0;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const { return 0; }
  virtual int local_size() const { return 1; }
};

// Reads the environment, chooses how this worker takes part (said in the
// log at info level, with the reason) and joins. Throws caravan::Error.
std::unique_ptr<Worker> start_worker();

}  // namespace caravan
