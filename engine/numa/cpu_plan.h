// Which CPUs a local worker gets, from a topology and the BYTEPS_* settings.
// Pure: it reads the topology and binds nothing, so any machine hwloc can
// describe (synthetic, XML) can be planned for and tested here.
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "engine/numa/cpu_settings.h"

namespace caravan {

struct CpuPlan {
  CpuList cpus;                      // the worker's logical CPUs (OS numbers)
  std::vector<unsigned> numa_nodes;  // OS numbers of the NUMA nodes they lie in
  int cores = 0;                     // physical cores among `cpus`
  std::string how;                   // how they were chosen, for the log
  std::vector<std::string> notes;    // remarks worth a debug line
};

// The CPUs of local worker `settings.local_rank` when BYTEPS_NUMA_ON=1 (the
// caller does not bind at all when it is 0):
//  - BYTEPS_VISIBLE_CPU_CORES given: its section for this local rank, less
//    BYTEPS_CPU_BLACKLIST. Every section is checked, so all workers of a
//    machine report the same mistake.
//  - otherwise each local worker gets BYTEPS_NUMA_DEFAULT_QUOTA physical
//    cores (default: usable cores / BYTEPS_LOCAL_SIZE, at most what its
//    NUMA node has) from its home NUMA node: the one nearest its GPU where
//    hwloc knows it, else the nodes in local-rank order. A node that runs
//    out lends cores from its nearest neighbours. Ranks are served in order,
//    so no two workers share a core. With BYTEPS_MULTITHREADED_CPU=1 a core
//    brings all its hardware threads, else only its first.
// A blacklisted CPU is never used; a core is usable while one of its
// threads is. With fewer usable cores than local workers and no quota
// asked for, the plan has no CPUs (`how` says why): the workers run
// unbound, as they would under BytePS without numactl. Throws a
// CARAVAN_ERR_CONFIG error naming the variable and value when settings
// given explicitly cannot be met on this topology.
CpuPlan plan_worker_cpus(hwloc_topology_t topology, const CpuSettings& settings);

}  // namespace caravan
