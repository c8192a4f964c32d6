// What a worker knows of a tensor it push_pulls: its shape, its partitions
// and how their values travel (its Payload), fixed at its first use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/worker/partition_plan.h"
#include "engine/worker/worker.h"

namespace caravan {

class Payload;

struct TensorPlan {
  std::string name;
  size_t count = 0;
  int dtype = 0;
  OpKind kind = OpKind::kPushPull;  // fixed at first use
  std::vector<Partition> partitions;
  std::unique_ptr<Payload> payload;
  // Guarded by the TensorTable's mutex:
  bool in_flight = false;
  uint64_t rounds = 0;  // push_pulls submitted: the next one's round (seeds)

  TensorPlan();
  ~TensorPlan();
};

// A tensor used again must be used as at first: throws caravan::Error,
// MISMATCH (another kind of operation, count or dtype than it `was`) or BUSY
// (an operation of it is in flight). The words every way of summing uses.
struct TensorUse {
  OpKind kind;
  size_t count;
  int dtype;
};
void check_reuse(const std::string& name, const TensorUse& was, bool in_flight,
                 const TensorUse& now);

}  // namespace caravan
