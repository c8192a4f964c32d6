// The zmq van's parameters, each declared once: plugin_entry.cc lists them
// in the descriptor and zmq_van.cc reads them.
#ifndef CARAVAN_VAN_ZMQ_PARAMS_H
#define CARAVAN_VAN_ZMQ_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"
#include "tcp/tcp_address.h"

namespace caravan::van_zmq::params {

inline constexpr plugin::Param kIoThreads{"IO_THREADS", "1", "number of zmq I/O threads"};
inline constexpr plugin::Param kSndHwm{
    "SNDHWM", "0", "messages queued per peer before send() blocks (0 = unlimited)"};
inline constexpr plugin::Param kRcvHwm{"RCVHWM", "0",
                                       "messages queued per connection on receive (0 = unlimited)"};
inline constexpr plugin::Param kMaxMessageBytes{
    "MAX_MESSAGE_BYTES", "0", "largest message accepted, in bytes (0 or -1 = unlimited)"};
inline constexpr plugin::Param kLingerMs{
    "LINGER_MS", "500",
    "at close, how long a link may go on sending what it queued, in ms (at least 1)"};

using plugin::tcp::kSndBuf;  // shared with van-tcp

inline constexpr caravan_param_info kList[] = {kIoThreads.info,       kSndHwm.info,   kRcvHwm.info,
                                               kMaxMessageBytes.info, kLingerMs.info, kSndBuf.info};

}  // namespace caravan::van_zmq::params

#endif  // CARAVAN_VAN_ZMQ_PARAMS_H
