// What a worker and a server on one host send each other through the van
// when values travel through shared memory (wire flag kShm): the values
// segment of such a KV message carries one of these bodies instead of
// values.
//
// - Attach request (kShm without kPush/kPull): "map my segment number
//   `index`". Answered with status 0 once the server mapped it, or an
//   error saying why it cannot (another host, another /dev/shm, IPC off).
// - push_pull request and its answer (kShm with kPush|kPull): a slot
//   descriptor; the values lie in the worker's segment at that place, and
//   the server writes the result back into the same slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/ipc/mapped_segment.h"

namespace caravan::ipc {

struct SlotDescriptor {
  uint64_t segment = 0;  // the worker's segment number, in attach order
  uint64_t offset = 0;   // from the segment's start
  uint64_t length = 0;   // bytes

  bool operator==(const SlotDescriptor& o) const {
    return segment == o.segment && offset == o.offset && length == o.length;
  }
};
constexpr size_t kDescriptorBytes = 24;

struct AttachRequest {
  uint64_t index = 0;
  SegmentIdentity segment;
};

std::vector<uint8_t> encode_descriptor(const SlotDescriptor& d);
// Throws std::runtime_error when `len` is not a descriptor's size.
SlotDescriptor decode_descriptor(const void* data, size_t len);

std::vector<uint8_t> encode_attach(const AttachRequest& a);
// Throws std::runtime_error on a malformed body.
AttachRequest decode_attach(const void* data, size_t len);

}  // namespace caravan::ipc
