#include "engine/numa/topology.h"

#include <cerrno>
#include <cstring>

#include "engine/base/error.h"

namespace caravan {
namespace {

Error hwloc_failure(const std::string& what) {
  return Error(CARAVAN_ERR_INTERNAL, "hwloc: " + what + ": " + std::strerror(errno));
}

}  // namespace

Topology::Topology() {
  if (hwloc_topology_init(&topo_) != 0) throw hwloc_failure("cannot create a topology");
  // Not hwloc's pci plugin (libpciaccess, which libhwloc-plugins brings, e.g.
  // with Open MPI): it leaks at exit, which LeakSanitizer then reports in
  // every process, and on Linux hwloc reads the same PCI devices and their
  // locality from sysfs, only without device names, which nothing here
  // uses (hwloc's "I/O Devices" documentation). Without the plugins
  // installed this is a no-op.
  hwloc_topology_set_components(topo_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
}

Topology::~Topology() {
  if (topo_) hwloc_topology_destroy(topo_);
}

Topology Topology::this_machine(bool with_io) {
  Topology t;
  // GPUs and their bridges are "important" I/O; disks and NICs are not needed.
  if (with_io) hwloc_topology_set_io_types_filter(t.topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t.topo_) != 0) throw hwloc_failure("cannot read this machine's topology");
  return t;
}

Topology Topology::synthetic(const std::string& description) {
  Topology t;
  if (hwloc_topology_set_synthetic(t.topo_, description.c_str()) != 0)
    throw hwloc_failure("invalid synthetic topology '" + description + "'");
  if (hwloc_topology_load(t.topo_) != 0)
    throw hwloc_failure("cannot load synthetic topology '" + description + "'");
  return t;
}

Topology Topology::xml(const std::string& text) {
  Topology t;
  hwloc_topology_set_io_types_filter(t.topo_, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_set_xmlbuffer(t.topo_, text.c_str(), static_cast<int>(text.size()) + 1) != 0 ||
      hwloc_topology_load(t.topo_) != 0)
    throw hwloc_failure("cannot load XML topology");
  return t;
}

}  // namespace caravan
