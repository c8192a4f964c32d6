// send()'s checks of its segments, as van_v2.h asks them of every van.
#ifndef CARAVAN_PLUGINS_COMMON_EVENTS_SEND_CHECKS_H
#define CARAVAN_PLUGINS_COMMON_EVENTS_SEND_CHECKS_H

#include <cstddef>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"

namespace caravan::plugin {

// 1 to CARAVAN_VAN_MAX_SEGMENTS_V2 segments, each with data unless it is
// empty: returns their total length, or throws INVALID_ARGUMENT saying
// what is wrong, after `who` ("send to peer 9: ") when given.
inline size_t checked_send_bytes(const caravan_segment_v2* segments, size_t n,
                                 const std::string& who = {}) {
  std::string at = who.empty() ? who : who + ": ";
  if (!segments || n == 0 || n > CARAVAN_VAN_MAX_SEGMENTS_V2)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, at + std::to_string(n) + " segments (1 to " +
                                                     std::to_string(CARAVAN_VAN_MAX_SEGMENTS_V2) +
                                                     " allowed)");
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!segments[i].data && segments[i].len)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  at + "segment " + std::to_string(i) + " has no data");
    total += segments[i].len;
  }
  return total;
}

}  // namespace caravan::plugin

#endif
