// The C face of the rdma-core verbs van: its parameters, its descriptor and the one
// exported symbol. The descriptor comes from the SDK's van_descriptor_v2, whose ops table
// keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "verbs_van.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<caravan::van_verbs::VerbsVan>(
    "verbs", "0.1.0",
    "ibverbs RDMA van: RC queue pairs over rdma_cm, eager sends + rendezvous RDMA reads + cached "
    "RDMA writes",
    caravan::van_verbs::params::kList))
