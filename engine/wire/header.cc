#include "engine/wire/header.h"

#include <cstdio>
#include <cstring>

namespace caravan::wire {
namespace {

// Little-endian stores and loads that do not depend on the host's order.
template <class T>
void put(uint8_t* p, T v) {
  using U = std::make_unsigned_t<T>;
  U u = static_cast<U>(v);
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(u >> (8 * i));
}

template <class T>
T get(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U u = 0;
  for (size_t i = 0; i < sizeof(T); ++i) u |= static_cast<U>(static_cast<U>(p[i]) << (8 * i));
  return static_cast<T>(u);
}

bool known_type(uint16_t t) {
  switch (static_cast<Type>(t)) {
    case Type::kKV:
    case Type::kAck:
    case Type::kProbe:
    case Type::kRegister:
    case Type::kNodeTable:
    case Type::kBarrier:
    case Type::kBarrierDone:
    case Type::kAbort:
    case Type::kHeartbeat:
    case Type::kAuthHello:
    case Type::kAuthChallenge:
    case Type::kAuthProof:
    case Type::kBarrierWaiting:
    case Type::kReport:
      return true;
  }
  return false;
}

}  // namespace

void encode(const Header& h, uint8_t out[kHeaderBytes]) {
  std::memset(out, 0, kHeaderBytes);
  put<uint32_t>(out + 0, kMagic);
  put<uint16_t>(out + 4, kVersion);
  put<uint16_t>(out + 6, static_cast<uint16_t>(h.type));
  put<uint32_t>(out + 8, h.flags);
  put<int32_t>(out + 12, h.sender);
  put<int32_t>(out + 16, h.recipient);
  put<int32_t>(out + 20, h.app_id);
  put<int32_t>(out + 24, h.customer_id);
  put<int32_t>(out + 28, h.timestamp);
  put<int32_t>(out + 32, h.cmd);
  put<int32_t>(out + 36, h.priority);
  out[40] = h.dtype;
  out[41] = h.device_type;
  put<int16_t>(out + 42, h.device_id);
  put<int32_t>(out + 44, h.status);
  for (size_t i = 0; i < kSegments; ++i) put<uint64_t>(out + 48 + 8 * i, h.seg_len[i]);
}

bool plausible_prefix(const void* data, size_t len, std::string* why) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint8_t magic[4];
  put<uint32_t>(magic, kMagic);
  for (size_t i = 0; i < 4 && i < len; ++i) {
    if (p[i] != magic[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "bad magic: byte %zu is 0x%02x (expected 0x%02x of 0x%08x)", i,
                    p[i], magic[i], kMagic);
      *why = buf;
      return false;
    }
  }
  if (len < 8) return true;
  // Magic, version and type are all here: the full check says the rest.
  uint8_t head[kHeaderBytes] = {};
  std::memcpy(head, p, 8);
  Header ignored;
  return decode(head, kHeaderBytes, UINT64_MAX, &ignored, why);
}

bool decode(const void* data, size_t len, uint64_t max_segment_bytes, Header* h, std::string* why) {
  char buf[160];
  if (len != kHeaderBytes) {
    std::snprintf(buf, sizeof buf, "header is %zu bytes, expected %zu", len, kHeaderBytes);
    *why = buf;
    return false;
  }
  const uint8_t* p = static_cast<const uint8_t*>(data);
  uint32_t magic = get<uint32_t>(p);
  if (magic != kMagic) {
    std::snprintf(buf, sizeof buf, "bad magic 0x%08x (expected 0x%08x)", magic, kMagic);
    *why = buf;
    return false;
  }
  uint16_t version = get<uint16_t>(p + 4);
  if (version != kVersion) {
    std::snprintf(buf, sizeof buf, "wire format version %u, this build speaks %u", version,
                  kVersion);
    *why = buf;
    return false;
  }
  uint16_t type = get<uint16_t>(p + 6);
  if (!known_type(type)) {
    std::snprintf(buf, sizeof buf, "unknown message type %u", type);
    *why = buf;
    return false;
  }
  h->type = static_cast<Type>(type);
  h->flags = get<uint32_t>(p + 8);
  h->sender = get<int32_t>(p + 12);
  h->recipient = get<int32_t>(p + 16);
  h->app_id = get<int32_t>(p + 20);
  h->customer_id = get<int32_t>(p + 24);
  h->timestamp = get<int32_t>(p + 28);
  h->cmd = get<int32_t>(p + 32);
  h->priority = get<int32_t>(p + 36);
  h->dtype = p[40];
  h->device_type = p[41];
  h->device_id = get<int16_t>(p + 42);
  h->status = get<int32_t>(p + 44);
  for (size_t i = 0; i < kSegments; ++i) {
    h->seg_len[i] = get<uint64_t>(p + 48 + 8 * i);
    if (h->seg_len[i] > max_segment_bytes) {
      std::snprintf(buf, sizeof buf, "segment %zu declares %llu bytes, over the limit of %llu", i,
                    static_cast<unsigned long long>(h->seg_len[i]),
                    static_cast<unsigned long long>(max_segment_bytes));
      *why = buf;
      return false;
    }
  }
  return true;
}

}  // namespace caravan::wire
