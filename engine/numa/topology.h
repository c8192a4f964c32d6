// An hwloc topology owned for its scope: this machine's, or one described
// by a synthetic string or XML (tests, and machines we cannot touch).
#pragma once

#include <hwloc.h>

#include <string>

namespace caravan {

class Topology {
 public:
  // This machine as the process sees it (CPUs outside its cgroup are left
  // out); with `with_io`, PCI devices and GPUs too. Throws caravan::Error.
  static Topology this_machine(bool with_io);
  // hwloc's synthetic form, e.g. "pack:2 numa:2 core:8 pu:2".
  static Topology synthetic(const std::string& description);
  static Topology xml(const std::string& text);

  Topology(Topology&& other) noexcept : topo_(other.topo_) { other.topo_ = nullptr; }
  Topology& operator=(Topology&&) = delete;
  Topology(const Topology&) = delete;
  ~Topology();

  hwloc_topology_t get() const { return topo_; }

 private:
  Topology();
  hwloc_topology_t topo_ = nullptr;
};

// An hwloc bitmap owned for its scope.
class Bitmap {
 public:
  Bitmap() : map_(hwloc_bitmap_alloc()) {}
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  ~Bitmap() { hwloc_bitmap_free(map_); }
  hwloc_bitmap_t get() const { return map_; }

 private:
  hwloc_bitmap_t map_;
};

}  // namespace caravan
