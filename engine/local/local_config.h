// Where this worker's push_pull goes: BYTEPS_LOCAL_RANK, BYTEPS_LOCAL_SIZE
// and BYTEPS_FORCE_DISTRIBUTED, read and checked against DMLC_NUM_WORKER.
#pragma once

#include <string>

namespace caravan {

// Largest BYTEPS_LOCAL_SIZE: far beyond any machine's GPU or socket count,
// small enough that a typo cannot make a segment of absurd size.
constexpr int kMaxLocalSize = 1024;

struct LocalConfig {
  int local_rank = 0;              // BYTEPS_LOCAL_RANK
  int local_size = 1;              // BYTEPS_LOCAL_SIZE
  bool force_distributed = false;  // BYTEPS_FORCE_DISTRIBUTED

  // Throws a CARAVAN_ERR_CONFIG error naming the variable and its value.
  static LocalConfig from_env();
};

// How this process takes part, and why, for the log.
struct WorkerPlan {
  bool joins_job = false;    // needs the scheduler and servers
  bool local_group = false;  // shares sums with other processes of this machine
  std::string reason;
};

// As BytePS: the scheduler and servers are needed only when there is more
// than one machine (DMLC_NUM_WORKER counts machines) or when forced.
WorkerPlan plan_worker(int num_machines, const LocalConfig& local);

}  // namespace caravan
