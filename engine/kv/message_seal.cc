#include "engine/kv/message_seal.h"

#include <cstdint>

#include "engine/base/error.h"
#include "engine/wire/header.h"

namespace caravan {
namespace {

void put_be64(uint8_t* p, uint64_t v) {
  for (int i = 7; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}

uint64_t get_be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

// Segments as sent or as received: the same four ranges.
struct Parts {
  const void* data[4];
  size_t len[4];
};

// Values are left out, unless the vals segment holds a shared-memory body
// (a descriptor or an attach request) rather than values.
auth::Mac tag(const auth::HmacSha256& key, const uint8_t* seq, uint32_t flags, const Parts& p) {
  auth::Bytes vals =
      (flags & wire::kShm) ? auth::Bytes{p.data[2], p.len[2]} : auth::Bytes{nullptr, 0};
  return key.mac(
      {{seq, 8}, {p.data[0], p.len[0]}, {p.data[1], p.len[1]}, {p.data[3], p.len[3]}, vals});
}

}  // namespace

MessageSeal::MessageSeal(const auth::JobToken& token, const auth::Nonce& job, int32_t me,
                         const std::vector<int32_t>& peers) {
  for (int32_t p : peers) {
    if (p == me) continue;
    peers_.emplace(p,
                   std::make_unique<Peer>(token.data_key(job, me, p), token.data_key(job, p, me)));
  }
}

std::unique_lock<std::mutex> MessageSeal::seal(int32_t to, const caravan_segment_v2* segments,
                                               Seal* out) {
  auto it = peers_.find(to);
  if (it == peers_.end())
    throw Error(CARAVAN_ERR_INVALID_ARGUMENT, "sealing a message for node " + std::to_string(to) +
                                                  ", which is no node of this job");
  wire::Header h;
  std::string fault;
  if (!wire::decode(segments[0].data, segments[0].len, UINT64_MAX, &h, &fault))
    throw Error(CARAVAN_ERR_INTERNAL, "sealing a message whose header does not decode: " + fault);
  Parts parts;
  for (size_t i = 0; i < 4; ++i) parts.data[i] = segments[i].data, parts.len[i] = segments[i].len;
  Peer& peer = *it->second;
  std::unique_lock<std::mutex> lock(peer.send_mu);
  uint8_t* seq = out->data();
  put_be64(seq, ++peer.sent);
  auth::Mac mac = tag(peer.send_key, seq, h.flags, parts);
  std::copy(mac.begin(), mac.end(), out->begin() + 8);
  return lock;
}

bool MessageSeal::open(const caravan_recv_segment_v2* segments, size_t num_segments,
                       std::string* why) {
  wire::Header h;
  std::string fault;
  if (num_segments == 0 ||
      !wire::decode(segments[0].data, segments[0].len, UINT64_MAX, &h, &fault)) {
    *why = "not a Caravan message (" + (num_segments ? fault : std::string("no segments")) +
           "), so without a CARAVAN_JOB_TOKEN seal";
    return false;
  }
  // An acknowledgement echoes the header of the message it acknowledges,
  // so it comes from that message's recipient.
  int32_t from = h.type == wire::Type::kAck ? h.recipient : h.sender;
  // Built only for a refusal: this runs for every message.
  auto claim = [from] { return "it claims to come from node " + std::to_string(from); };
  if (num_segments != 5 || segments[4].len != kBytes) {
    *why = claim() + " but carries no CARAVAN_JOB_TOKEN seal (" + std::to_string(num_segments) +
           " segments; a sealed message has 5, the last of " + std::to_string(kBytes) + " bytes)";
    return false;
  }
  // The header's lengths are sealed; holding the segments to them makes the
  // sealed bytes (header | keys | lens) split one way only.
  for (size_t i = 0; i < 3; ++i) {
    if (segments[i + 1].len != h.seg_len[i]) {
      *why = claim() + " but segment " + std::to_string(i + 1) + " has " +
             std::to_string(segments[i + 1].len) + " bytes, the header declares " +
             std::to_string(h.seg_len[i]);
      return false;
    }
  }
  auto it = peers_.find(from);
  if (it == peers_.end()) {
    *why = claim() + ", which is no peer of this node in this job";
    return false;
  }
  Peer& peer = *it->second;
  const auto* seal = static_cast<const uint8_t*>(segments[4].data);
  Parts parts;
  for (size_t i = 0; i < 4; ++i) parts.data[i] = segments[i].data, parts.len[i] = segments[i].len;
  auth::Mac mac = tag(peer.recv_key, seal, h.flags, parts);
  if (!auth::same_mac(mac.data(), seal + 8)) {
    *why = claim() +
           " but its CARAVAN_JOB_TOKEN seal is wrong (made without the job's token, or "
           "the message was altered)";
    return false;
  }
  uint64_t seq = get_be64(seal);
  if (seq <= peer.received) {
    *why = claim() + " with seal number " + std::to_string(seq) + ", already past (" +
           std::to_string(peer.received) + " accepted): a replayed message";
    return false;
  }
  peer.received = seq;
  return true;
}

}  // namespace caravan
