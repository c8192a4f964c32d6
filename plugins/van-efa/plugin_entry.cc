// The C face of the libfabric van: its parameters, its descriptor and the one
// exported symbol. The descriptor comes from the SDK's van_descriptor_v2, whose ops table
// keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "efa_van.h"
#include "params.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<caravan::van_efa::EfaVan>(
    "efa", "0.1.0",
    "libfabric van (EFA by default; any FI_EP_RDM provider), eager + rendezvous reads + cached "
    "remote writes",
    caravan::van_efa::params::kList))
