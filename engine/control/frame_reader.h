// Cuts the control channel's TCP byte stream back into messages (wire
// header + body). Pure: no socket, so it can be fed hostile bytes in any
// chunking by a test or a fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/wire/header.h"

namespace caravan {

class FrameReader {
 public:
  enum class Next { kMessage, kNeedMore, kMalformed };

  // A header declaring a body over `max_body` bytes is malformed.
  explicit FrameReader(uint64_t max_body) : max_body_(max_body) {}

  void append(const uint8_t* data, size_t len);
  // Takes the next whole message out of the buffer. kMalformed is final: a
  // byte stream cannot be resynchronised after a bad header, so the caller
  // drops the connection (with *why).
  Next next(wire::Header* head, std::vector<uint8_t>* body, std::string* why);
  // Bytes of a message that has begun but not finished arriving.
  size_t buffered() const { return buf_.size() - start_; }
  // "30 of 72 header bytes" or "10 of 500 body bytes", for the log of a
  // connection that stopped in the middle of a message.
  std::string describe_partial() const;

 private:
  uint64_t max_body_;
  std::vector<uint8_t> buf_;
  size_t start_ = 0;  // consumed bytes at the front, compacted lazily
};

}  // namespace caravan
