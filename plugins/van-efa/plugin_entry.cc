// The C face of the libfabric van: its parameters, its descriptor and the one
// exported symbol. The operations table comes from the SDK's van_ops_v2,
// which keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "efa_van.h"

namespace {

using caravan::van_efa::EfaVan;

const caravan_param_info kParams[] = {
    {"PROVIDER", nullptr, "libfabric provider (default: FI_PROVIDER, else efa)"},
    {"EAGER_BYTES", "65536", "largest frame sent eagerly, header included; larger messages use rendezvous"},
    {"MAX_REGISTERED_BYTES", "536870912", "bound on registered memory (half for sending, half for receiving)"},
    {"RX_DEPTH", "64", "receive buffers kept posted"},
    {"SPIN", "1", "1: poll the completion queue while transfers are in flight; 0: block in 1 ms slices (idle always blocks)"},
    {"RMA", "1", "0: send large messages as chunked eager frames even when the provider has remote reads"},
    {"ZERO_COPY", "1", "1: the receiver reads large messages straight from the sender's memory, registered for the transfer (done runs once it is read); 0: they are copied into a registered staging buffer first"},
    {"CACHE_BYTES", nullptr, "remote-buffer cache: receive buffers lent to senders so a key's next large message is written straight into one, without a request to send; at most a quarter of MAX_REGISTERED_BYTES (the default); 0 turns it off"},
    {"CLOSE_TIMEOUT_MS", "5000", "finalize waits this long for posted operations to finish before closing the endpoint; past it the endpoint is left open, with a warning"},
};

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
