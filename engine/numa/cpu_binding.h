// Binding a worker process to the CPUs plan_worker_cpus chooses for it.
#pragma once

#include <optional>

#include "engine/numa/cpu_plan.h"
#include "engine/numa/cpu_settings.h"

namespace caravan {

// With BYTEPS_NUMA_ON=1, binds every thread of this process (and those it
// starts later) to this local worker's CPUs on this machine and logs them
// at info level; returns the plan applied. With BYTEPS_NUMA_ON=0 binds
// nothing and returns nullopt. A process binds once: later calls return
// the first one's result. Throws caravan::Error (and binds again when
// called after that).
std::optional<CpuPlan> bind_worker_cpus(const CpuSettings& settings);

}  // namespace caravan
