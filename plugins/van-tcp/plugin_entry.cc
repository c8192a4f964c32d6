// The C face of the tcp van: its parameters, its descriptor and the one
// exported symbol. The descriptor comes from the SDK's van_descriptor_v2,
// whose ops table keeps exceptions from crossing the boundary.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "params.h"
#include "tcp_van.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<caravan::van_tcp::TcpVan>(
    "tcp", "0.1.0", "plain TCP van (epoll; sends written by the caller, reads by the poller)",
    caravan::van_tcp::params::kList))
