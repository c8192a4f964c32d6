// The C face of the ucx van: its parameters, its descriptor and the one
// exported symbol. The descriptor comes from the SDK's van_descriptor_v2,
// whose ops table keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "ucx_van.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<caravan::van_ucx::UcxVan>(
    "ucx", "0.1.0",
    "UCX van (UCP active messages over any UCX transport: tcp, shared memory, RDMA; "
    "rendezvous straight into lent memory)",
    caravan::van_ucx::params::kList))
