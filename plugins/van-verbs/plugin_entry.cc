// The C face of the rdma-core verbs van: its parameters, its descriptor and the one
// exported symbol. The operations table comes from the SDK's van_ops_v2,
// which keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "verbs_van.h"

namespace {

using caravan::van_verbs::VerbsVan;

const caravan_param_info kParams[] = {
    {"EAGER_BYTES", "65536", "largest frame sent eagerly, header included; larger messages are read remotely (same on every node)"},
    {"MAX_REGISTERED_BYTES", "536870912", "bound on registered memory (half for sending, half for receiving); RLIMIT_MEMLOCK should allow it"},
    {"RX_DEPTH", "128", "receive buffers kept posted on the shared receive queue"},
    {"SEND_DEPTH", "256", "work requests in flight per connection (sends, remote reads and writes)"},
    {"CACHE_BYTES", nullptr, "remote-buffer cache: receive buffers lent to senders so a key's next large message is RDMA-written straight into one, without a request to send; at most a quarter of MAX_REGISTERED_BYTES (the default); 0 turns it off"},
    {"RESOLVE_TIMEOUT_MS", "5000", "rdma_cm address and route resolution timeout"},
};

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
