// The tcp van's parameters, each declared once: plugin_entry.cc lists them
// in the descriptor and tcp_van.cc reads them.
#ifndef CARAVAN_VAN_TCP_PARAMS_H
#define CARAVAN_VAN_TCP_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"
#include "tcp/tcp_address.h"

namespace caravan::van_tcp::params {

inline constexpr plugin::Param kMaxMessageBytes{
    "MAX_MESSAGE_BYTES", "0",
    "largest message accepted, in bytes (0 = unlimited); a peer announcing a larger one is cut "
    "off"};
using plugin::tcp::kSndBuf;

inline constexpr caravan_param_info kList[] = {kMaxMessageBytes.info, kSndBuf.info};

}  // namespace caravan::van_tcp::params

#endif  // CARAVAN_VAN_TCP_PARAMS_H
