// The C face of the ZeroMQ van: its parameters, its descriptor and the one
// exported symbol. The descriptor comes from the SDK's van_descriptor_v2, whose ops table
// keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "zmq_van.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<caravan::van_zmq::ZmqVan>(
    "zmq", "0.1.0", "ZeroMQ TCP van (ROUTER/DEALER, zero-copy send)",
    caravan::van_zmq::params::kList))
