#include "engine/numa/gpu_locality.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "engine/numa/cpu_settings.h"

namespace caravan {
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;
constexpr unsigned kVgaClass = 0x0300;
constexpr unsigned k3dClass = 0x0302;  // data-centre GPUs have no display

std::string bus_id(hwloc_obj_t pci) {
  char buf[32];
  const auto& a = pci->attr->pcidev;
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", a.domain, a.bus, a.dev, a.func);
  return buf;
}

// hwloc's CUDA plugin, where installed, names GPUs "cuda<N>" after the CUDA
// runtime's own numbering, CUDA_VISIBLE_DEVICES already applied.
std::vector<hwloc_obj_t> cuda_devices(hwloc_topology_t topo) {
  std::vector<hwloc_obj_t> by_index;
  for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o; o = hwloc_get_next_osdev(topo, o)) {
    std::string name = o->name ? o->name : "";
    if (name.rfind("cuda", 0) != 0) continue;
    auto index = parse_index(name.substr(4));
    if (!index) continue;
    if (*index >= by_index.size()) by_index.resize(*index + 1, nullptr);
    by_index[*index] = o;
  }
  if (std::count(by_index.begin(), by_index.end(), nullptr) > 0) return {};
  return by_index;
}

// Without that plugin: NVIDIA's PCI functions in bus order, which is CUDA's
// order under CUDA_DEVICE_ORDER=PCI_BUS_ID and, on machines with one GPU
// model, under its default order too.
std::vector<hwloc_obj_t> nvidia_pci_devices(hwloc_topology_t topo) {
  std::vector<hwloc_obj_t> gpus;
  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, nullptr); o;
       o = hwloc_get_next_pcidev(topo, o)) {
    const auto& a = o->attr->pcidev;
    if (a.vendor_id == kNvidiaVendor && (a.class_id == kVgaClass || a.class_id == k3dClass))
      gpus.push_back(o);
  }
  auto key = [](hwloc_obj_t o) {
    const auto& a = o->attr->pcidev;
    return std::make_tuple(a.domain, a.bus, a.dev, a.func);
  };
  std::sort(gpus.begin(), gpus.end(), [&](auto x, auto y) { return key(x) < key(y); });
  return gpus;
}

// The devices CUDA_VISIBLE_DEVICES leaves, in its order. Like the CUDA
// runtime, the list ends at the first entry that is not a valid index.
// nullopt (with `why`) when it names GPUs by UUID, which only NVML maps.
std::optional<std::vector<hwloc_obj_t>> cuda_visible(const std::vector<hwloc_obj_t>& all,
                                                     const std::string& cvd, std::string* why) {
  std::vector<hwloc_obj_t> out;
  size_t start = 0;
  while (start <= cvd.size()) {
    size_t comma = cvd.find(',', start);
    if (comma == std::string::npos) comma = cvd.size();
    std::string item = cvd.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0) {
      *why = "CUDA_VISIBLE_DEVICES='" + cvd +
             "' names GPUs by UUID, which hwloc maps to PCI devices only with its CUDA or NVML "
             "plugin";
      return std::nullopt;
    }
    auto index = parse_index(item);
    if (!index || *index >= all.size()) break;
    out.push_back(all[*index]);
    start = comma + 1;
  }
  return out;
}

std::string gpu_name(hwloc_obj_t gpu) {
  return gpu->type == HWLOC_OBJ_OS_DEVICE ? std::string(gpu->name) : bus_id(gpu);
}

}  // namespace

GpuLocality find_gpu_locality(hwloc_topology_t topo, int local_size,
                              const std::optional<std::string>& cuda_visible_devices) {
  GpuLocality g;
  std::vector<hwloc_obj_t> gpus = cuda_devices(topo);
  if (gpus.empty()) {
    std::vector<hwloc_obj_t> all = nvidia_pci_devices(topo);
    if (all.empty()) {
      g.unknown_reason = "hwloc sees no NVIDIA GPU on this machine";
      return g;
    }
    gpus = all;
    if (cuda_visible_devices) {
      auto visible = cuda_visible(all, *cuda_visible_devices, &g.unknown_reason);
      if (!visible) return g;
      gpus = *visible;
    }
  }
  if (static_cast<int>(gpus.size()) < local_size) {
    g.unknown_reason =
        std::to_string(gpus.size()) + " GPU(s) visible" +
        (cuda_visible_devices ? " (CUDA_VISIBLE_DEVICES='" + *cuda_visible_devices + "')"
                              : std::string()) +
        ", fewer than BYTEPS_LOCAL_SIZE=" + std::to_string(local_size) +
        " local workers, so the GPU of each local rank is not known";
    return g;
  }
  int numa_count = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  std::vector<std::vector<hwloc_obj_t>> nodes;
  std::vector<std::string> names;
  for (int r = 0; r < local_size; ++r) {
    hwloc_obj_t gpu = gpus[static_cast<size_t>(r)];
    hwloc_obj_t near = hwloc_get_non_io_ancestor_obj(topo, gpu);
    // A device hung from the machine itself is one whose PCI locality the
    // OS did not report (common in VMs): it says nothing on a NUMA machine.
    bool whole_machine = near == nullptr || near->parent == nullptr;
    std::vector<hwloc_obj_t> local;
    if (!whole_machine || numa_count == 1) {
      for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n;
           n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n))
        if (near && hwloc_bitmap_isset(near->nodeset, n->os_index)) local.push_back(n);
    }
    if (local.empty()) {
      g.unknown_reason = "the PCI locality of GPU " + gpu_name(gpu) + " (local rank " +
                         std::to_string(r) + ") is unknown to hwloc";
      return g;
    }
    nodes.push_back(std::move(local));
    names.push_back(gpu_name(gpu));
  }
  g.nodes = std::move(nodes);
  g.gpu_names = std::move(names);
  return g;
}

}  // namespace caravan
