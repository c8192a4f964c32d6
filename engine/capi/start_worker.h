// How this process takes part in the job as a worker, chosen at
// caravan_init from the environment: through the servers, alone, or with
// the other processes of its machine.
#pragma once

#include <memory>

#include "engine/worker/worker.h"

namespace caravan {

struct JobConfig;

// Reads the environment, chooses how this worker takes part (said in the
// log at info level, with the reason) and joins. Throws caravan::Error.
// `config`, when given, receives the job's configuration as read.
// `resuming`: caravan_resume or caravan_rejoin, which wait for the others
// up to CARAVAN_RESUME_TIMEOUT and ask for node rank `resume_rank` (-1:
// none); `regrouped`: caravan_rejoin, whose counts are the scheduler's,
// coming from `regrouped_from` (Worker::generation()).
std::unique_ptr<Worker> start_worker(JobConfig* config = nullptr, bool resuming = false,
                                     int resume_rank = -1, bool regrouped = false,
                                     JobConfig::Generation regrouped_from = {});

// What caravan_suspend leaves for caravan_resume.
struct Suspended {
  int rank = 0;
  int local_size = 1;
  bool in_job = false;  // the job had servers, which wait for the resume
};

// Sets this process's environment for the start_worker() of a resume:
// DMLC_NUM_WORKER and DMLC_NUM_SERVER, and, when the servers wait,
// BYTEPS_FORCE_DISTRIBUTED=1 to join them whatever the count. Returns the
// node rank to ask for (`rank` < 0: that of the rank it had; a machine's
// with local groups). Throws caravan::Error (INVALID_ARGUMENT) on counts
// below one.
int prepare_resume(const Suspended& was, int num_workers, int num_servers, int rank);

}  // namespace caravan
