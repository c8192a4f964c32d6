// What the ucx van puts in each active message's header: a magic number,
// the kind, the segment count, the stream (one per connection attempt of a
// sending instance) and the message's place in it, the send's slot, which
// segment the data holds and each segment's length.
//
// A message of one large segment and small others (the engine's: header,
// keys and lengths beside the values) carries the small ones in the header,
// after the lengths, in order, and the large one alone as its data: one
// contiguous buffer, which every UCX protocol takes, its zero-copy ones
// included (where the endpoint detects a lost peer: UcxVan::lay_out says
// why). Otherwise (data_segment kEverySegment) the segments' bytes
// travel as the data, back to back. UCX may hand rendezvous messages over
// out of order; the
// stream and sequence let the receiver put them back in the order they were
// sent, as van_v2.h guarantees. A stream's first message (sequence 0) is a
// HELLO whose data is the sender's listening address, the name its
// messages carry in logs.
//
// To a peer reached over TCP alone, a message whose large segment exceeds
// the van's piece size goes as several active messages of kind PIECE
// (UcxVan::post says why): each header is the message's own, followed by
// the piece's offset in the large segment, and only the piece at offset 0
// carries the small segments. Any piece may arrive first.
#ifndef CARAVAN_VAN_UCX_WIRE_H
#define CARAVAN_VAN_UCX_WIRE_H

#include <cstddef>
#include <cstdint>

#include "caravan/plugin/van_v2.h"

namespace caravan::van_ucx {

constexpr uint32_t kWireMagic = 0x32585543u;  // "CUX2"
constexpr unsigned kAmId = 17;                // the van's one active message handler

enum class Kind : uint32_t { kHello = 1, kData = 2, kPiece = 3 };

struct WireHead {
  uint32_t magic;
  Kind kind;
  uint64_t stream;
  uint64_t seq;
  uint64_t slot;
  uint32_t num_segments;
  uint32_t data_segment;  // the one segment the data holds, or kEverySegment
  uint64_t lens[CARAVAN_VAN_MAX_SEGMENTS_V2];
};

constexpr uint32_t kEverySegment = UINT32_MAX;

// The most bytes of small segments a header carries: they are copied (by
// the sender into the header, by UCX into its first packet or rendezvous
// request), so only what is cheaper to copy than to send apart. UCX may
// allow fewer (ucp_worker_query's max_am_header).
constexpr size_t kMostInlineBytes = 1024;

// The bytes of a header with n segments, before the segments it carries:
// lengths past n are not sent.
constexpr size_t wire_head_bytes(size_t n) {
  return offsetof(WireHead, lens) + n * sizeof(uint64_t);
}

// A PIECE's header: the message's, then the piece's offset (a uint64_t).
constexpr size_t piece_head_bytes(size_t n) { return wire_head_bytes(n) + sizeof(uint64_t); }

}  // namespace caravan::van_ucx

#endif  // CARAVAN_VAN_UCX_WIRE_H
