// The C face of the ZeroMQ van: its parameters, its descriptor and the one
// exported symbol. The operations table comes from the SDK's van_ops_v2,
// which keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "zmq_van.h"

namespace {

using caravan::van_zmq::ZmqVan;

const caravan_param_info kParams[] = {
    {"IO_THREADS", "1", "number of zmq I/O threads"},
    {"SNDHWM", "0", "messages queued per peer before send() blocks (0 = unlimited)"},
    {"RCVHWM", "0", "messages queued per connection on receive (0 = unlimited)"},
    {"MAX_MESSAGE_BYTES", "0", "largest message accepted, in bytes (0 or -1 = unlimited)"},
    {"LINGER_MS", "500",
     "at close, how long a link may go on sending what it queued, in ms (at least 1)"},
};

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_VAN_ABI_MAJOR_V2,
    CARAVAN_VAN_ABI_MINOR_V2,
    CARAVAN_PLUGIN_KIND_VAN,
    sizeof(caravan_plugin_descriptor),
    "zmq",
    "0.1.0",
    "ZeroMQ TCP van (ROUTER/DEALER, zero-copy send)",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    caravan::plugin::van_ops_v2<ZmqVan>(),
};

}  // namespace

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
