// The C face of the rdma-core verbs van: its parameters, its descriptor and the one
// exported symbol. The operations table comes from the SDK's van_ops_v2,
// which keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "verbs_van.h"

namespace {

using caravan::van_verbs::VerbsVan;

constexpr const auto& kParams = caravan::van_verbs::params::kList;

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_VAN_ABI_MAJOR_V2,
    CARAVAN_VAN_ABI_MINOR_V2,
    CARAVAN_PLUGIN_KIND_VAN,
    sizeof(caravan_plugin_descriptor),
    "verbs",
    "0.1.0",
    "ibverbs RDMA van: RC queue pairs over rdma_cm, eager sends + rendezvous RDMA reads + cached RDMA writes",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    caravan::plugin::van_ops_v2<VerbsVan>(),
};

}  // namespace

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
