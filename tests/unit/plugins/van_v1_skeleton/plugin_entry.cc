// The C face of the ABI 1 test van (v1_van.h): its descriptor and the one
// exported symbol, the table built by the SDK's van_cxx.hpp. A 1.1 table
// without send_slot; van_table_cut.c cuts it to 1.0's size.
#include "caravan/plugin/van_cxx.hpp"
#include "v1_van.h"

namespace {
const caravan_param_info kParams[] = {
    {"MAX_MESSAGE_BYTES", "4294967296", "largest message accepted, in bytes"},
};
}  // namespace

CARAVAN_PLUGIN_ENTRY(caravan::plugin::plugin_descriptor(
    CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V1, CARAVAN_VAN_ABI_MINOR_V1, "v1skeleton",
    "0.1.0", "ABI 1 van over plain TCP sockets (a test of the engine's lift)", kParams,
    sizeof kParams / sizeof kParams[0], caravan::plugin::van_ops_v1<skeleton::V1Van>()))
