#include "engine/numa/cpu_binding.h"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <sstream>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/numa/topology.h"

namespace caravan {

namespace {

std::optional<CpuPlan> bind_now(const CpuSettings& settings) {
  if (!settings.numa_on) {
    if (settings.visible) {
      CARAVAN_LOG(WARNING) << "BYTEPS_VISIBLE_CPU_CORES='" << settings.visible_text
                           << "' is ignored: BYTEPS_NUMA_ON=0 turns CPU binding off";
    }
    CARAVAN_LOG(DEBUG) << "BYTEPS_NUMA_ON=0: not binding this worker to CPUs";
    return std::nullopt;
  }
  // Only the NUMA placement looks for GPUs; explicit cores need no I/O scan.
  Topology topology = Topology::this_machine(!settings.visible);
  CpuPlan plan = plan_worker_cpus(topology.get(), settings);
  for (const std::string& note : plan.notes) CARAVAN_LOG(DEBUG) << note;
  if (plan.cpus.empty()) {
    CARAVAN_LOG(WARNING) << plan.how << ": local rank " << settings.local_rank
                         << " runs unbound (BYTEPS_NUMA_ON=0 does so without looking)";
    return std::nullopt;
  }
  Bitmap set;
  for (unsigned cpu : plan.cpus) hwloc_bitmap_set(set.get(), cpu);
  if (hwloc_set_cpubind(topology.get(), set.get(), HWLOC_CPUBIND_PROCESS) != 0)
    throw Error(CARAVAN_ERR_CONFIG, "cannot bind this worker to CPUs " +
                                        format_cpu_list(plan.cpus) + ": " + std::strerror(errno) +
                                        "; set BYTEPS_NUMA_ON=0 to run unbound");
  std::ostringstream nodes;
  for (size_t i = 0; i < plan.numa_nodes.size(); ++i) nodes << (i ? "," : "") << plan.numa_nodes[i];
  CARAVAN_LOG(INFO) << "local rank " << settings.local_rank << " of " << settings.local_size
                    << " bound to CPUs " << format_cpu_list(plan.cpus) << ": " << plan.cores
                    << " core(s) on NUMA node " << nodes.str() << " (" << plan.how << ")";
  return plan;
}

}  // namespace

std::optional<CpuPlan> bind_worker_cpus(const CpuSettings& settings) {
  // Once a process: caravan_init binds before it starts anything, and the
  // node it may then join, which binds for ps::Start, leaves that be.
  static std::mutex mu;
  static std::optional<std::optional<CpuPlan>> done;
  std::lock_guard<std::mutex> lock(mu);
  if (!done) done = bind_now(settings);
  return *done;
}

}  // namespace caravan
