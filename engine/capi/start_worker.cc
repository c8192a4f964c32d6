// Chooses how this worker takes part in the job from the environment.
#include "engine/base/error.h"
#include "engine/core/config.h"
#include "engine/worker/job_member.h"
#include "engine/worker/worker.h"

namespace caravan {

std::unique_ptr<Worker> start_worker() {
  JobConfig config = JobConfig::from_env();
  if (config.role != Role::kWorker)
    throw Error(CARAVAN_ERR_STATE, std::string("DMLC_ROLE=") + role_name(config.role) +
                                       ": caravan_init() joins as a worker; run the " +
                                       role_name(config.role) + " with caravan-server");
  return std::make_unique<DistributedWorker>(config);
}

}  // namespace caravan
