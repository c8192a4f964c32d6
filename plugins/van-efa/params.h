// The libfabric van's parameters, each declared once: plugin_entry.cc lists
// them in the descriptor and efa_van.cc reads them.
#ifndef CARAVAN_VAN_EFA_PARAMS_H
#define CARAVAN_VAN_EFA_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"
#include "rendezvous/params.h"

namespace caravan::van_efa::params {

// No default in the listing: FI_PROVIDER, else efa.
inline constexpr plugin::Param kProvider{"PROVIDER", nullptr,
                                         "libfabric provider (default: FI_PROVIDER, else efa)"};
inline constexpr plugin::Param kEagerBytes{
    "EAGER_BYTES", "65536",
    "largest frame sent eagerly, header included; larger messages use rendezvous"};
inline constexpr plugin::Param kMaxRegisteredBytes{
    "MAX_REGISTERED_BYTES", "536870912",
    "bound on registered memory (half for sending, half for receiving)"};
inline constexpr plugin::Param kRxDepth{"RX_DEPTH", "64", "receive buffers kept posted"};
inline constexpr plugin::Param kSpin{"SPIN", "1",
                                     "1: poll the completion queue while transfers are in flight; "
                                     "0: block in 1 ms slices (idle always blocks)"};
inline constexpr plugin::Param kRma{
    "RMA", "1",
    "0: send large messages as chunked eager frames even when the provider has remote reads"};
inline constexpr plugin::Param kZeroCopy{
    "ZERO_COPY", "1",
    "1: the receiver reads large messages straight from the sender's memory, registered for "
    "the transfer (done runs once it is read); 0: they are copied into a registered staging "
    "buffer first"};
inline constexpr plugin::Param kCloseTimeoutMs{"CLOSE_TIMEOUT_MS", "5000",
                                               "finalize waits this long for posted operations to "
                                               "finish before closing the endpoint; past it the "
                                               "endpoint is left open, with a warning"};

inline constexpr caravan_param_info kList[] = {
    kProvider.info, kEagerBytes.info, kMaxRegisteredBytes.info,     kRxDepth.info,       kSpin.info,
    kRma.info,      kZeroCopy.info,   rendezvous::kCacheBytes.info, kCloseTimeoutMs.info};

}  // namespace caravan::van_efa::params

#endif  // CARAVAN_VAN_EFA_PARAMS_H
