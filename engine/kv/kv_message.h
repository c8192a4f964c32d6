// A key-value message as the engine handles it: the wire header plus three
// byte ranges (keys, values, lengths) that may borrow memory owned by
// someone else (a user buffer, a received van message) kept alive by `keep`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "caravan/plugin/van_v2.h"
#include "engine/wire/header.h"

namespace caravan {

struct Blob {
  void* data = nullptr;
  size_t len = 0;
  std::shared_ptr<const void> keep;  // owner of the memory, if any

  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

struct KVMessage {
  wire::Header head;
  Blob keys;         // uint64_t keys
  Blob vals;         // values, or the error text of a failed response
  Blob lens;         // int32_t value lengths per key, optional
  std::string peer;  // transport address of the sender, for logs

  bool is_error() const { return head.status < 0; }
  std::string error_text() const {
    return std::string(static_cast<const char*>(vals.data), vals.len);
  }
};

// Checks a message as a van delivered it (the wire header, then keys, vals
// and lens) and points out's blobs at its segments without taking ownership
// (the caller sets `keep`). On failure returns false and says why in *why.
bool decode_kv_message(const caravan_recv_segment_v2* segments, size_t num_segments, int my_id,
                       KVMessage* out, std::string* why);

}  // namespace caravan
