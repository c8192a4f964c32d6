#include "engine/numa/cpu_plan.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "engine/base/error.h"
#include "engine/numa/gpu_locality.h"
#include "engine/numa/topology.h"

namespace caravan {
namespace {

struct Core {
  CpuList threads;  // its usable hardware threads
};

// The usable cores whose home is one NUMA node, handed out front to back.
struct NumaCores {
  hwloc_obj_t node;
  std::vector<Core> cores;
  size_t next = 0;
  size_t free() const { return cores.size() - next; }
};

bool contains(const CpuList& list, unsigned cpu) {
  return std::binary_search(list.begin(), list.end(), cpu);
}

hwloc_obj_t next_inside(hwloc_topology_t t, hwloc_const_cpuset_t set, hwloc_obj_type_t type,
                        hwloc_obj_t prev) {
  return hwloc_get_next_obj_inside_cpuset_by_type(t, set, type, prev);
}

CpuList all_cpus(hwloc_topology_t t) {
  CpuList cpus;
  for (hwloc_obj_t pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, nullptr); pu;
       pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu))
    cpus.push_back(pu->os_index);
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::vector<NumaCores> usable_cores(hwloc_topology_t t, const CpuList& blacklist) {
  // Some platforms (and VMs) report no core level; each thread is then its own core.
  hwloc_obj_type_t core_type =
      hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  Bitmap counted;
  std::vector<NumaCores> nodes;
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n;
       n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) {
    NumaCores nc{n, {}, 0};
    for (hwloc_obj_t c = next_inside(t, n->cpuset, core_type, nullptr); c;
         c = next_inside(t, n->cpuset, core_type, c)) {
      // A second NUMA node over the same cores (high-bandwidth memory beside
      // DDR) must not hand them out twice: a core belongs to the first.
      if (hwloc_bitmap_intersects(counted.get(), c->cpuset)) continue;
      hwloc_bitmap_or(counted.get(), counted.get(), c->cpuset);
      Core core;
      for (hwloc_obj_t pu = next_inside(t, c->cpuset, HWLOC_OBJ_PU, nullptr); pu;
           pu = next_inside(t, c->cpuset, HWLOC_OBJ_PU, pu))
        if (!contains(blacklist, pu->os_index)) core.threads.push_back(pu->os_index);
      std::sort(core.threads.begin(), core.threads.end());
      if (!core.threads.empty()) nc.cores.push_back(std::move(core));
    }
    if (!nc.cores.empty()) nodes.push_back(std::move(nc));
  }
  return nodes;
}

// The depth of the deepest object holding both NUMA nodes: nodes of one
// package are nearer each other than nodes that share only the machine.
int closeness(hwloc_topology_t t, hwloc_obj_t a, hwloc_obj_t b) {
  hwloc_obj_t common = hwloc_get_common_ancestor_obj(t, a->parent, b->parent);
  return common ? common->depth : -1;
}

// `home` first, then the others nearest first.
std::vector<size_t> lending_order(hwloc_topology_t t, const std::vector<NumaCores>& nodes,
                                  size_t home) {
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if ((x == home) != (y == home)) return x == home;
    return closeness(t, nodes[home].node, nodes[x].node) >
           closeness(t, nodes[home].node, nodes[y].node);
  });
  return order;
}

size_t home_node(hwloc_topology_t t, const std::vector<NumaCores>& nodes, const GpuLocality& gpu,
                 int rank, int local_size) {
  if (gpu.nodes.empty())
    return static_cast<size_t>(rank) * nodes.size() / static_cast<size_t>(local_size);
  const std::vector<hwloc_obj_t>& near = gpu.nodes[static_cast<size_t>(rank)];
  size_t best = nodes.size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    bool local = std::find(near.begin(), near.end(), nodes[i].node) != near.end();
    if (local && (best == nodes.size() || nodes[i].free() > nodes[best].free())) best = i;
  }
  if (best != nodes.size()) return best;
  // Every core of the GPU's own node is blacklisted: the nearest node that has some.
  best = 0;
  for (size_t i = 1; i < nodes.size(); ++i)
    if (closeness(t, near[0], nodes[i].node) > closeness(t, near[0], nodes[best].node)) best = i;
  return best;
}

std::string blacklist_clause(const CpuSettings& s) {
  return s.blacklist.empty() ? "" : " outside BYTEPS_CPU_BLACKLIST='" + s.blacklist_text + "'";
}

void note_absent_blacklisted(hwloc_topology_t t, const CpuSettings& s, CpuPlan& plan) {
  CpuList absent;
  for (unsigned cpu : s.blacklist)
    if (!hwloc_get_pu_obj_by_os_index(t, cpu)) absent.push_back(cpu);
  if (!absent.empty())
    plan.notes.push_back("BYTEPS_CPU_BLACKLIST='" + s.blacklist_text + "' names CPU(s) " +
                         format_cpu_list(absent) + ", which this process does not have anyway");
}

CpuPlan plan_visible(hwloc_topology_t t, const CpuSettings& s) {
  const std::string var = "BYTEPS_VISIBLE_CPU_CORES='" + s.visible_text + "'";
  CpuPlan plan;
  const std::vector<CpuList>& sections = *s.visible;
  for (size_t r = 0; r < sections.size(); ++r) {
    for (unsigned cpu : sections[r])
      if (!hwloc_get_pu_obj_by_os_index(t, cpu))
        throw config_error(var + ": CPU " + std::to_string(cpu) +
                           " (in the section of local rank " + std::to_string(r) +
                           ") is not a CPU of this machine that this " +
                           "process may use; those are " + format_cpu_list(all_cpus(t)));
    CpuList left;
    for (unsigned cpu : sections[r])
      if (!contains(s.blacklist, cpu)) left.push_back(cpu);
    if (left.empty())
      throw config_error(var + ": the section of local rank " + std::to_string(r) + " (" +
                         format_cpu_list(sections[r]) + ") is empty once BYTEPS_CPU_BLACKLIST='" +
                         s.blacklist_text + "' is taken out");
    if (static_cast<int>(r) == s.local_rank) plan.cpus = std::move(left);
  }
  std::set<hwloc_obj_t> cores;
  std::set<unsigned> numa;
  for (unsigned cpu : plan.cpus) {
    hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, cpu);
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
    cores.insert(core ? core : pu);
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, nullptr); n;
         n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n))
      if (hwloc_bitmap_isset(n->cpuset, cpu)) numa.insert(n->os_index);
  }
  plan.cores = static_cast<int>(cores.size());
  plan.numa_nodes.assign(numa.begin(), numa.end());
  plan.how = "BYTEPS_VISIBLE_CPU_CORES";
  note_absent_blacklisted(t, s, plan);
  return plan;
}

CpuPlan plan_by_numa(hwloc_topology_t t, const CpuSettings& s) {
  std::vector<NumaCores> nodes = usable_cores(t, s.blacklist);
  size_t total = 0;
  for (const NumaCores& n : nodes) total += n.cores.size();
  const size_t workers = static_cast<size_t>(s.local_size);
  if (s.quota && static_cast<size_t>(*s.quota) * workers > total)
    throw config_error(
        "BYTEPS_NUMA_DEFAULT_QUOTA=" + std::to_string(*s.quota) +
        " physical cores for each of BYTEPS_LOCAL_SIZE=" + std::to_string(s.local_size) +
        " local workers needs " + std::to_string(static_cast<size_t>(*s.quota) * workers) +
        " cores, but this machine has " + std::to_string(total) + " usable cores" +
        blacklist_clause(s));
  if (!s.quota && total < workers) {
    // A small machine running many workers (tests, CPU-only training):
    // nothing was asked for that could be refused.
    CpuPlan unbound;
    unbound.how = "BYTEPS_LOCAL_SIZE=" + std::to_string(s.local_size) +
                  " local workers cannot each have a core of their own: this machine has " +
                  std::to_string(total) + " usable cores" + blacklist_clause(s);
    return unbound;
  }

  CpuPlan plan;
  GpuLocality gpu = find_gpu_locality(t, s.local_size, s.cuda_visible_devices);
  if (gpu.nodes.empty())
    plan.notes.push_back("GPU locality not used (" + gpu.unknown_reason +
                         "); local workers take NUMA nodes in local-rank order");
  // Every worker replays the choices of the ranks before it, so that all
  // of them agree on who has which core without talking to each other.
  for (int r = 0; r <= s.local_rank; ++r) {
    size_t home = home_node(t, nodes, gpu, r, s.local_size);
    size_t quota = s.quota ? static_cast<size_t>(*s.quota)
                           : std::min(total / workers, nodes[home].cores.size());
    std::vector<const Core*> taken;
    std::set<unsigned> numa;
    for (size_t i : lending_order(t, nodes, home)) {
      while (taken.size() < quota && nodes[i].free() > 0) {
        taken.push_back(&nodes[i].cores[nodes[i].next++]);
        numa.insert(nodes[i].node->os_index);
      }
    }
    if (r != s.local_rank) continue;
    for (const Core* c : taken) {
      if (s.multithreaded)
        plan.cpus.insert(plan.cpus.end(), c->threads.begin(), c->threads.end());
      else
        plan.cpus.push_back(c->threads.front());
    }
    std::sort(plan.cpus.begin(), plan.cpus.end());
    plan.cores = static_cast<int>(taken.size());
    plan.numa_nodes.assign(numa.begin(), numa.end());
    plan.how = gpu.nodes.empty() ? "NUMA nodes by local rank"
                                 : "nearest GPU " + gpu.gpu_names[static_cast<size_t>(r)];
  }
  note_absent_blacklisted(t, s, plan);
  return plan;
}

}  // namespace

CpuPlan plan_worker_cpus(hwloc_topology_t topology, const CpuSettings& settings) {
  return settings.visible ? plan_visible(topology, settings) : plan_by_numa(topology, settings);
}

}  // namespace caravan
