// What the vans' disconnect() checks of their map of peers, as van_v2.h
// asks it of every van: a peer that is not connected is an
// INVALID_ARGUMENT naming it.
#ifndef CARAVAN_PLUGINS_COMMON_TCP_PEER_LINKS_H
#define CARAVAN_PLUGINS_COMMON_TCP_PEER_LINKS_H

#include <cstdint>
#include <string>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin::tcp {

// Takes `peer`'s link out of `links` (the caller holds their lock).
template <class Links>
typename Links::mapped_type take_link(Links& links, uint64_t peer) {
  auto it = links.find(peer);
  if (it == links.end())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "disconnect peer " + std::to_string(peer) + ": not connected");
  typename Links::mapped_type link = std::move(it->second);
  links.erase(it);
  return link;
}

}  // namespace caravan::plugin::tcp

#endif
