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
std::unique_ptr<Worker> start_worker(JobConfig* config = nullptr);

}  // namespace caravan
