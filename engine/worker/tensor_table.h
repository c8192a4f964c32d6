// The tensors a worker has used: their plans (fixed at first use), their
// keys, their declared compression, and which have an operation in flight
// (at most one each).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/compress/compression_spec.h"
#include "engine/worker/tensor_plan.h"

namespace caravan {

class TensorTable {
 public:
  // Plans a tensor at its first use (`spec`: its declared compression, or
  // null). Runs under the table's lock; throws caravan::Error.
  using Planner = std::function<std::unique_ptr<TensorPlan>(
      const std::string& name, size_t count, int dtype, OpKind kind, const CompressionSpec* spec)>;
  explicit TensorTable(Planner plan) : plan_(std::move(plan)) {}

  // The tensor, planned at its first use or checked against it (MISMATCH),
  // marked in flight (BUSY if it was); *round is this operation's round.
  TensorPlan& start(const std::string& name, size_t count, int dtype, OpKind kind, uint64_t* round);
  // Its operation is over: the tensor is free for the next.
  void finish(TensorPlan& plan);
  // Waits until no operation is in flight; throws CARAVAN_ERR_TIMEOUT.
  void drain(std::chrono::seconds timeout);
  // Before the tensor's first use; the same spec again is fine, another
  // one or a tensor already used is MISMATCH.
  void declare_compression(const std::string& name, CompressionSpec spec);

 private:
  Planner plan_;
  std::mutex mu_;
  std::condition_variable idle_;
  int in_flight_ = 0;
  std::unordered_map<std::string, std::unique_ptr<TensorPlan>> tensors_;
  std::unordered_map<uint64_t, std::string> keys_;
  std::unordered_map<std::string, CompressionSpec> compression_;
};

}  // namespace caravan
