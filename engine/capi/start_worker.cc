#include "engine/capi/start_worker.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/base/config.h"
#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/local/local_config.h"
#include "engine/local/local_worker.h"
#include "engine/local/solo_worker.h"
#include "engine/numa/cpu_binding.h"
#include "engine/worker/distributed_worker.h"
#include "engine/worker/worker.h"

namespace caravan {

std::unique_ptr<Worker> start_worker(JobConfig* config_out, bool resuming, int resume_rank,
                                     bool regrouped, JobConfig::Generation regrouped_from) {
  // The job's shape decides which other variables are required, so it is
  // read first.
  int machines = static_cast<int>(env::required_integer("DMLC_NUM_WORKER", 1, 1 << 20));
  LocalConfig local = LocalConfig::from_env();
  WorkerPlan plan = plan_worker(machines, local);
  JobConfig config = JobConfig::from_env(std::nullopt, !plan.joins_job, resuming);
  config.resuming = resuming;
  config.resume_rank = resume_rank;
  config.regrouped = regrouped;
  config.regrouped_from = regrouped_from;
  if (config.role != Role::kWorker)
    throw Error(CARAVAN_ERR_STATE, std::string("DMLC_ROLE=") + role_name(config.role) +
                                       ": caravan_init() joins as a worker; run the " +
                                       role_name(config.role) + " with caravan-server");
  // Every worker process, whatever the job's shape (BytePS's launcher binds
  // each local worker): before anything here starts a thread, so that all
  // are born bound. Local ranks above 0 and single workers never join a
  // node, which used to be the only place that bound.
  bind_worker_cpus(CpuSettings::from_env());
  CARAVAN_LOG(INFO) << plan.reason;
  if (config_out) *config_out = config;
  if (plan.local_group) return std::make_unique<LocalWorker>(config, local, plan.joins_job);
  if (plan.joins_job) return std::make_unique<DistributedWorker>(config);
  Log::set_node_label("worker 0");
  return std::make_unique<SoloWorker>();
}

int prepare_resume(const Suspended& was, int num_workers, int num_servers, int rank) {
  if (num_workers < 1 || num_servers < 1)
    throw Error(CARAVAN_ERR_INVALID_ARGUMENT,
                "caravan_resume(num_workers=" + std::to_string(num_workers) +
                    ", num_servers=" + std::to_string(num_servers) +
                    "): the job needs at least one worker and one server");
  // As in BytePS's resume(), which sets the variables it is given. The
  // rank is no variable: DMLC_WORKER_ID names this machine's local group,
  // and the rank asked is a wish the scheduler may not grant.
  ::setenv("DMLC_NUM_WORKER", std::to_string(num_workers).c_str(), 1);
  ::setenv("DMLC_NUM_SERVER", std::to_string(num_servers).c_str(), 1);
  // The servers and scheduler wait for this worker even when it is now the
  // only one, which would otherwise train alone.
  if (was.in_job) ::setenv("BYTEPS_FORCE_DISTRIBUTED", "1", 1);
  return (rank >= 0 ? rank : was.rank) / std::max(was.local_size, 1);
}

}  // namespace caravan
