// Which NUMA nodes lie nearest each local worker's GPU, as far as hwloc
// knows: the worker of local rank r drives CUDA device r.
#pragma once

#include <hwloc.h>

#include <optional>
#include <string>
#include <vector>

namespace caravan {

struct GpuLocality {
  // By local rank: the NUMA nodes local to that rank's GPU, never empty.
  // Empty as a whole when the locality of any local rank's GPU is unknown,
  // so that every worker of the machine makes the same choice.
  std::vector<std::vector<hwloc_obj_t>> nodes;
  std::vector<std::string> gpu_names;  // by local rank: "cuda1" or a PCI bus id
  std::string unknown_reason;          // set when `nodes` is empty
};

// `cuda_visible_devices` is CUDA_VISIBLE_DEVICES (nullopt when unset).
GpuLocality find_gpu_locality(hwloc_topology_t topology, int local_size,
                              const std::optional<std::string>& cuda_visible_devices);

}  // namespace caravan
