#include "rendezvous/config.h"

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::rendezvous {

size_t cache_bytes_param(int64_t value, size_t max_registered_bytes) {
  if (value < 0 || static_cast<uint64_t>(value) > max_registered_bytes / 4)
    throw plugin::Error(
        CARAVAN_STATUS_INVALID_ARGUMENT,
        "plugin parameter CACHE_BYTES must be 0 to a quarter of MAX_REGISTERED_BYTES (" +
            std::to_string(max_registered_bytes / 4) + "), not " + std::to_string(value));
  return static_cast<size_t>(value);
}

std::string describe(const Counts& c) {
  return "large messages: " + std::to_string(c.by_request) + " by request to send, " +
         std::to_string(c.by_write) + " written into buffers peers lent; " +
         std::to_string(c.lent) + " buffers lent to peers (" + std::to_string(c.lent_bytes) +
         " bytes)";
}

}  // namespace caravan::rendezvous
