#include "engine/local/local_config.h"

#include "engine/base/env.h"
#include "engine/base/error.h"

namespace caravan {

LocalConfig LocalConfig::from_env() {
  LocalConfig c;
  c.local_size = static_cast<int>(env::integer("BYTEPS_LOCAL_SIZE", 1, kMaxLocalSize, 1));
  c.local_rank = static_cast<int>(env::integer("BYTEPS_LOCAL_RANK", 0, kMaxLocalSize - 1, 0));
  if (c.local_rank >= c.local_size) {
    std::string size = env::get("BYTEPS_LOCAL_SIZE")
                           ? "BYTEPS_LOCAL_SIZE=" + std::to_string(c.local_size)
                           : "BYTEPS_LOCAL_SIZE (unset, so 1)";
    throw config_error("BYTEPS_LOCAL_RANK=" + std::to_string(c.local_rank) + " must be less than " +
                       size);
  }
  c.force_distributed = env::boolean("BYTEPS_FORCE_DISTRIBUTED", false);
  return c;
}

WorkerPlan plan_worker(int num_machines, const LocalConfig& local) {
  WorkerPlan p;
  p.local_group = local.local_size > 1;
  p.joins_job = num_machines > 1 || local.force_distributed;
  std::string locals = "BYTEPS_LOCAL_SIZE=" + std::to_string(local.local_size);
  if (num_machines > 1) {
    p.reason =
        "DMLC_NUM_WORKER=" + std::to_string(num_machines) + ": joining the scheduler and servers";
  } else if (local.force_distributed) {
    p.reason =
        "DMLC_NUM_WORKER=1 but BYTEPS_FORCE_DISTRIBUTED=1: joining the scheduler and "
        "servers anyway";
  } else if (p.local_group) {
    p.reason = "DMLC_NUM_WORKER=1 and " + locals +
               ": push_pull is a sum over this machine's processes through shared memory; no "
               "scheduler or server (BYTEPS_FORCE_DISTRIBUTED=1 would join them)";
  } else {
    p.reason = "DMLC_NUM_WORKER=1 and " + locals +
               ": single worker, push_pull completes in this process; no scheduler or server "
               "(BYTEPS_FORCE_DISTRIBUTED=1 would join them)";
  }
  if (p.joins_job && p.local_group)
    p.reason += "; " + locals + ": local rank 0 pushes and pulls for this machine's processes";
  return p;
}

}  // namespace caravan
