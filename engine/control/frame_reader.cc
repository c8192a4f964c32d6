#include "engine/control/frame_reader.h"

namespace caravan {

void FrameReader::append(const uint8_t* data, size_t len) {
  // Compacting only when the consumed part dominates keeps a burst of small
  // messages linear instead of shifting the buffer once per message.
  if (start_ > 0 && start_ >= buf_.size() / 2) {
    buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buf_.insert(buf_.end(), data, data + len);
}

FrameReader::Next FrameReader::next(wire::Header* head, std::vector<uint8_t>* body,
                                    std::string* why) {
  const uint8_t* p = buf_.data() + start_;
  size_t have = buffered();
  if (have < wire::kHeaderBytes) {
    if (!wire::plausible_prefix(p, have, why)) return Next::kMalformed;
    return Next::kNeedMore;
  }
  if (!wire::decode(p, wire::kHeaderBytes, max_body_, head, why)) return Next::kMalformed;
  // Control messages have one segment, the body; the others must be empty
  // or the peer and we disagree about where the next message starts.
  if (head->seg_len[1] != 0 || head->seg_len[2] != 0) {
    *why = "a control message declares " + std::to_string(head->seg_len[1]) + " and " +
           std::to_string(head->seg_len[2]) + " bytes in segments 1 and 2, which must be empty";
    return Next::kMalformed;
  }
  size_t total = wire::kHeaderBytes + static_cast<size_t>(head->seg_len[0]);
  if (have < total) return Next::kNeedMore;
  body->assign(p + wire::kHeaderBytes, p + total);
  start_ += total;
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = 0;
  }
  return Next::kMessage;
}

std::string FrameReader::describe_partial() const {
  size_t have = buffered();
  if (have < wire::kHeaderBytes)
    return std::to_string(have) + " of " + std::to_string(wire::kHeaderBytes) + " header bytes";
  wire::Header h;
  std::string ignored;
  if (!wire::decode(buf_.data() + start_, wire::kHeaderBytes, max_body_, &h, &ignored))
    return std::to_string(have) + " bytes";
  return std::to_string(have - wire::kHeaderBytes) + " of " + std::to_string(h.seg_len[0]) +
         " body bytes";
}

}  // namespace caravan
