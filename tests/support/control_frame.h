// A control message framed as ControlHub::send writes it (wire header, then
// the body), for tests and corpora that play a peer of the control channel.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/wire/header.h"

namespace caravan::test {

inline std::vector<uint8_t> control_frame(wire::Type type, const std::vector<uint8_t>& body,
                                          int cmd = 0, uint32_t flags = 0) {
  wire::Header h;
  h.type = type;
  h.cmd = cmd;
  h.flags = flags;
  h.seg_len[0] = body.size();
  std::vector<uint8_t> b(wire::kHeaderBytes);
  wire::encode(h, b.data());
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

}  // namespace caravan::test
