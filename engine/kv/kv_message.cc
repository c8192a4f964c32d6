#include "engine/kv/kv_message.h"

namespace caravan {
namespace {

// Values can be larger than 4 GiB; a declared length beyond this is garbage.
constexpr uint64_t kMaxSegmentBytes = 1ull << 40;

}  // namespace

bool decode_kv_message(const caravan_recv_segment_v2* segments, size_t num_segments, int my_id,
                       KVMessage* m, std::string* why) {
  if (num_segments != 4) {
    *why = std::to_string(num_segments) + " segments, expected 4";
    return false;
  }
  if (!wire::decode(segments[0].data, segments[0].len, kMaxSegmentBytes, &m->head, why))
    return false;
  if (m->head.type != wire::Type::kKV && m->head.type != wire::Type::kAck &&
      m->head.type != wire::Type::kProbe) {
    *why = "message type " + std::to_string(static_cast<int>(m->head.type)) +
           " does not belong on the data plane";
    return false;
  }
  Blob* blobs[3] = {&m->keys, &m->vals, &m->lens};
  for (size_t i = 0; i < 3; ++i) {
    const caravan_recv_segment_v2& seg = segments[i + 1];
    if (seg.len != m->head.seg_len[i]) {
      *why = "segment " + std::to_string(i + 1) + " has " + std::to_string(seg.len) +
             " bytes, the header declares " + std::to_string(m->head.seg_len[i]);
      return false;
    }
    blobs[i]->data = seg.data;
    blobs[i]->len = seg.len;
  }
  if (m->keys.len % sizeof(uint64_t) != 0) {
    *why = "keys are not a whole number of uint64";
    return false;
  }
  if (m->lens.len % sizeof(int32_t) != 0) {
    *why = "lens are not a whole number of int32";
    return false;
  }
  // An acknowledgement echoes the acknowledged message's header, whose
  // sender is this node (checked where acknowledgements are handled).
  if (m->head.type != wire::Type::kAck && m->head.recipient != my_id) {
    *why = "addressed to node " + std::to_string(m->head.recipient) + ", this is node " +
           std::to_string(my_id);
    return false;
  }
  return true;
}

}  // namespace caravan
