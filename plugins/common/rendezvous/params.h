// The parameter the rendezvous protocol adds to every van that runs it,
// declared once for all of them: each lists it in its descriptor and reads
// it for its Config (checked by cache_bytes_param, config.h).
#ifndef CARAVAN_RENDEZVOUS_PARAMS_H
#define CARAVAN_RENDEZVOUS_PARAMS_H

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

// No default in the listing: it is a quarter of the van's MAX_REGISTERED_BYTES.
inline constexpr plugin::Param kCacheBytes{
    "CACHE_BYTES", nullptr,
    "remote-buffer cache: receive buffers lent to senders so a key's next large message is written "
    "straight into one (a remote write), without a request to send; at most a quarter of "
    "MAX_REGISTERED_BYTES (the default); 0 turns it off"};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_PARAMS_H
