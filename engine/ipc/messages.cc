#include "engine/ipc/messages.h"

#include <stdexcept>
#include <string>

#include "engine/wire/bytes.h"

namespace caravan::ipc {

std::vector<uint8_t> encode_descriptor(const SlotDescriptor& d) {
  wire::Writer w;
  w.u64(d.segment);
  w.u64(d.offset);
  w.u64(d.length);
  return std::move(w.bytes());
}

SlotDescriptor decode_descriptor(const void* data, size_t len) {
  if (len != kDescriptorBytes)
    throw std::runtime_error("a shared-memory slot descriptor is " +
                             std::to_string(kDescriptorBytes) + " bytes, this one " +
                             std::to_string(len));
  wire::Reader r(data, len);
  SlotDescriptor d;
  d.segment = r.u64();
  d.offset = r.u64();
  d.length = r.u64();
  return d;
}

std::vector<uint8_t> encode_attach(const AttachRequest& a) {
  wire::Writer w;
  w.u64(a.index);
  w.u64(a.segment.bytes);
  w.u64(a.segment.nonce);
  w.str(a.segment.name);
  return std::move(w.bytes());
}

AttachRequest decode_attach(const void* data, size_t len) {
  wire::Reader r(data, len);
  AttachRequest a;
  a.index = r.u64();
  a.segment.bytes = r.u64();
  a.segment.nonce = r.u64();
  a.segment.name = r.str(255);
  if (!r.done()) throw std::runtime_error("trailing bytes after an attach request");
  return a;
}

}  // namespace caravan::ipc
