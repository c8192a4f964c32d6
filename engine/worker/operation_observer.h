// Watchers of operations: the timeline and the metrics see each step of a
// push_pull here, so the data path itself never asks whether it is traced.
// Called on the thread where the step happened, with no lock held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/timeline.h"

namespace caravan {

class Operation;

class OperationObserver {
 public:
  virtual ~OperationObserver() = default;
  // Before any partition is queued (the caller's thread).
  virtual void submitted(Operation& op) {}
  // The van is done sending partition `index`.
  virtual void sent(Operation& op, size_t index) {}
  // Partition `index`'s answer is in the tensor.
  virtual void stored(Operation& op, size_t index) {}
  // Every partition is over (or, withdrawn, none was ever queued).
  virtual void ended(Operation& op) {}
};

// BYTEPS_TRACE_ON: the stages of each traced step's partitions (queue,
// push, pull, copy back) on the rows of its tensor, with the peer's name.
class TimelineObserver final : public OperationObserver {
 public:
  // `servers`: the servers' names by rank.
  TimelineObserver(std::unique_ptr<Timeline> timeline, std::vector<std::string> servers);
  void submitted(Operation& op) override;
  void sent(Operation& op, size_t index) override;
  void stored(Operation& op, size_t index) override;
  void ended(Operation& op) override;
  // A staged operation's stager adds stages of its own (Worker::Pipelined);
  // the step stays open until it calls `done`. Empty when not traced.
  void stager_hooks(const std::shared_ptr<Operation>& op,
                    std::function<void(const char*, size_t, int64_t, int64_t)>* trace,
                    std::function<void()>* done);

 private:
  void stage(Operation& op, size_t index, const char* name, int64_t from_us, int64_t to_us);
  std::unique_ptr<Timeline> timeline_;
  const std::vector<std::string> servers_;
};

// The push_pull metrics of operations that succeed, and at PS_VERBOSE=2 a
// line per operation on how its pulls overlapped its pushes.
class MetricsObserver final : public OperationObserver {
 public:
  void ended(Operation& op) override;
};

}  // namespace caravan
