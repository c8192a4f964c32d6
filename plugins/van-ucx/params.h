// The ucx van's parameters, each declared once: plugin_entry.cc lists them
// in the descriptor and ucx_van.cc reads them. UCX's own settings (UCX_TLS,
// UCX_NET_DEVICES, UCX_RNDV_THRESH, ...) are read by UCX itself from the
// environment, unchanged.
#ifndef CARAVAN_VAN_UCX_PARAMS_H
#define CARAVAN_VAN_UCX_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::van_ucx::params {

inline constexpr plugin::Param kRetryMs{
    "RETRY_MS", "100",
    "a connection refused before it was ever up is tried again after this many milliseconds "
    "(the engine bounds the whole wait with CARAVAN_CONNECT_TIMEOUT)"};
inline constexpr plugin::Param kCloseTimeoutMs{
    "CLOSE_TIMEOUT_MS", "5000",
    "finalize waits this long for UCX to end the receives in flight; past it they are left, "
    "with a warning"};
inline constexpr plugin::Param kPeerFailure{
    "PEER_FAILURE", "auto",
    "1: UCX reports a dead peer (its PEER error mode; transports without it, such as shared "
    "memory, are not used); 0: it does not, shared memory may be used and the engine's "
    "heartbeats find dead peers; auto: 1, else 0 where no transport has it"};
inline constexpr plugin::Param kPieceBytes{
    "PIECE_BYTES", "262144",
    "to a peer reached over TCP alone, a message's large segment above this many bytes goes "
    "as pieces of at most this size, each one zero-copy UCX send (UCX 1.13 sends larger eager "
    "messages through bounce buffers and puts them together in one of its own); 0: whole"};
inline constexpr caravan_param_info kList[] = {kRetryMs.info, kPeerFailure.info,
                                               kCloseTimeoutMs.info, kPieceBytes.info};

}  // namespace caravan::van_ucx::params

#endif  // CARAVAN_VAN_UCX_PARAMS_H
