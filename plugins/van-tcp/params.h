// The tcp van's parameters, each declared once: plugin_entry.cc lists them
// in the descriptor and tcp_van.cc reads them.
#ifndef CARAVAN_VAN_TCP_PARAMS_H
#define CARAVAN_VAN_TCP_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::van_tcp::params {

inline constexpr plugin::Param kMaxMessageBytes{
    "MAX_MESSAGE_BYTES", "0",
    "largest message accepted, in bytes (0 = unlimited); a peer announcing a larger one is cut off"};
inline constexpr plugin::Param kSndBuf{
    "SNDBUF", "auto",
    "kernel send buffer of a connection to a peer, in bytes: auto = 65536 to peers on other "
    "hosts and the kernel's autotuning to this host's (as van-zmq); 0 = autotuning always"};

inline constexpr caravan_param_info kList[] = {kMaxMessageBytes.info, kSndBuf.info};

}  // namespace caravan::van_tcp::params

#endif  // CARAVAN_VAN_TCP_PARAMS_H
