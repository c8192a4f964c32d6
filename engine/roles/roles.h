// The scheduler and server roles as whole programs; workers are user
// programs using the C API instead. caravan-server's one way into
// libcaravan: a stated interface for tools (engine/layers.txt), so change
// it with the tool.
#pragma once

#include "engine/base/config.h"

namespace caravan {

// Each returns the process exit code: 0 after a clean shutdown, 1 when the
// job failed (the reason is logged).
int run_scheduler(const JobConfig& config);
int run_server(const JobConfig& config);

// Reads the environment and runs the role DMLC_ROLE names (scheduler or
// server); prints configuration errors naming the variable.
int run_role_from_env(const char* program);

}  // namespace caravan
