// The C face of the libfabric van: its parameters, its descriptor and the one
// exported symbol. The operations table comes from the SDK's van_ops_v2,
// which keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "efa_van.h"

namespace {

using caravan::van_efa::EfaVan;

constexpr const auto& kParams = caravan::van_efa::params::kList;

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_VAN_ABI_MAJOR_V2,
    CARAVAN_VAN_ABI_MINOR_V2,
    CARAVAN_PLUGIN_KIND_VAN,
    sizeof(caravan_plugin_descriptor),
    "efa",
    "0.1.0",
    "libfabric van (EFA by default; any FI_EP_RDM provider), eager + rendezvous reads + cached remote writes",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    caravan::plugin::van_ops_v2<EfaVan>(),
};

}  // namespace

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
