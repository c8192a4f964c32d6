// The wire frames of the rendezvous protocol. Every frame fits one eager
// message; fields are little-endian host order (all supported hosts are).
#ifndef CARAVAN_RENDEZVOUS_FRAME_H
#define CARAVAN_RENDEZVOUS_FRAME_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "caravan/plugin/van_v2.h"

namespace caravan::rendezvous {

enum class Kind : uint8_t {
  kHello = 1,  // a new stream: payload is the sender's endpoint name
  kEager = 2,  // a whole message: segment lengths, then the bytes
  kRts = 3,    // request to send: lengths, small segments inline, where to read the rest
  kFin = 4,    // the receiver has read transfer `seq`; the sender may reuse it
  kChunk = 5,  // part of a message too large for one frame (no RMA)
  kGrant = 6,  // the receiver lends stream `stream` a buffer for slot `slot`: grant `seq`
  kPut = 7,    // the message was written into grant `grant`; inline segments follow
};

constexpr size_t kMaxSegments = CARAVAN_VAN_MAX_SEGMENTS_V2;
constexpr size_t kMaxNameBytes = 128;

struct Frame {
  Kind kind = Kind::kEager;
  uint8_t nseg = 0;
  uint64_t stream = 0;  // the sender's stream id (0 for kFin)
  uint64_t seq = 0;     // the message's place in its stream; the transfer for kFin
  uint64_t lens[kMaxSegments] = {};
  uint64_t total = 0;                  // sum of lens (derived, never on the wire)
  uint64_t xfer = 0;                   // kRts: transfer id the kFin echoes
  uint64_t inline_mask = 0;            // kRts, kPut: bit i set: segment i is in the payload
  uint64_t raddrs[kMaxSegments] = {};  // kRts: where each other segment is read from
  uint64_t keys[kMaxSegments] = {};    // kRts: and with which remote key
  uint64_t offset = 0;                 // kChunk: where the payload goes in the message
  uint64_t slot = 0;                   // kRts, kGrant: the sender's slot hint (0: none)
  uint64_t grant = 0;     // kPut: the grant written into; kRts: a grant handed back unused
  uint64_t capacity = 0;  // kGrant: bytes at raddrs[0] under keys[0]
  const char* payload = nullptr;
  size_t payload_len = 0;
};

// Bytes of the header of a frame of this kind with nseg segments.
size_t header_size(Kind kind, size_t nseg);

// Writes f's header (not the payload) at out; returns its size.
size_t encode_header(const Frame& f, char* out);

// Decodes and checks a received frame; on failure says why and returns false.
bool parse_frame(const char* buf, size_t len, Frame* out, std::string* why);

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_FRAME_H
