// The verbs van's parameters, each declared once: plugin_entry.cc lists them
// in the descriptor and verbs_van.cc reads them.
#ifndef CARAVAN_VAN_VERBS_PARAMS_H
#define CARAVAN_VAN_VERBS_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"
#include "rendezvous/params.h"

namespace caravan::van_verbs::params {

inline constexpr plugin::Param kEagerBytes{"EAGER_BYTES", "65536",
                                           "largest frame sent eagerly, header included; larger "
                                           "messages are read remotely (same on every node)"};
inline constexpr plugin::Param kMaxRegisteredBytes{
    "MAX_REGISTERED_BYTES", "536870912",
    "bound on registered memory (half for sending, half for receiving); RLIMIT_MEMLOCK should "
    "allow it"};
inline constexpr plugin::Param kRxDepth{"RX_DEPTH", "128",
                                        "receive buffers kept posted on the shared receive queue"};
inline constexpr plugin::Param kSendDepth{
    "SEND_DEPTH", "256", "work requests in flight per connection (sends, remote reads and writes)"};
inline constexpr plugin::Param kResolveTimeoutMs{"RESOLVE_TIMEOUT_MS", "5000",
                                                 "rdma_cm address and route resolution timeout"};

inline constexpr caravan_param_info kList[] = {
    kEagerBytes.info, kMaxRegisteredBytes.info,     kRxDepth.info,
    kSendDepth.info,  rendezvous::kCacheBytes.info, kResolveTimeoutMs.info};

}  // namespace caravan::van_verbs::params

#endif  // CARAVAN_VAN_VERBS_PARAMS_H
