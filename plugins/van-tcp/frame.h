// How the tcp van puts a message on a stream: a header of a magic number,
// the segment count, the send's slot and each segment's length
// (little-endian, as the hosts of one job are), then the segments' bytes
// back to back. The magic lets a receiver tell a Caravan peer from a
// stranger writing to its port; the slot, whether the engine lent memory
// for the message (lending.h).
#ifndef CARAVAN_VAN_TCP_FRAME_H
#define CARAVAN_VAN_TCP_FRAME_H

#include <cstddef>
#include <cstdint>

#include "caravan/plugin/van_v2.h"

namespace caravan::van_tcp {

constexpr uint32_t kFrameMagic = 0x32545643u;  // "CVT2"

struct FrameHead {
  uint32_t magic;
  uint32_t num_segments;
  uint64_t slot;
};

// The largest header: the fixed part and one length per segment.
constexpr size_t kMaxHeaderBytes =
    sizeof(FrameHead) + CARAVAN_VAN_MAX_SEGMENTS_V2 * sizeof(uint64_t);

}  // namespace caravan::van_tcp

#endif  // CARAVAN_VAN_TCP_FRAME_H
