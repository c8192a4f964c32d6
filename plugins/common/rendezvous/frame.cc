#include "rendezvous/frame.h"

#include <cstring>

namespace caravan::rendezvous {
namespace {

constexpr uint32_t kMagic = 0x5a565243;  // "CRVZ"
constexpr uint8_t kVersion = 3;
constexpr size_t kFixed = 24;

size_t extra_words(Kind kind, size_t nseg) {
  switch (kind) {
    case Kind::kRts:
      return 4 + 2 * nseg;
    case Kind::kChunk:
      return 1;
    case Kind::kGrant:
      return 4;
    case Kind::kPut:
      return 2;
    default:
      return 0;
  }
}

bool has_lens(Kind kind) {
  return kind == Kind::kEager || kind == Kind::kRts || kind == Kind::kChunk || kind == Kind::kPut;
}

void put64(char*& p, uint64_t v) {
  std::memcpy(p, &v, 8);
  p += 8;
}
uint64_t get64(const char*& p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  p += 8;
  return v;
}

}  // namespace

size_t header_size(Kind kind, size_t nseg) {
  return kFixed + 8 * ((has_lens(kind) ? nseg : 0) + extra_words(kind, nseg));
}

size_t encode_header(const Frame& f, char* out) {
  char* p = out;
  std::memcpy(p, &kMagic, 4);
  p[4] = static_cast<char>(kVersion);
  p[5] = static_cast<char>(f.kind);
  p[6] = static_cast<char>(f.nseg);
  p[7] = 0;
  p += 8;
  put64(p, f.stream);
  put64(p, f.seq);
  if (has_lens(f.kind))
    for (size_t i = 0; i < f.nseg; ++i) put64(p, f.lens[i]);
  if (f.kind == Kind::kRts) {
    put64(p, f.xfer);
    put64(p, f.inline_mask);
    put64(p, f.slot);
    put64(p, f.grant);
    for (size_t i = 0; i < f.nseg; ++i) put64(p, f.raddrs[i]);
    for (size_t i = 0; i < f.nseg; ++i) put64(p, f.keys[i]);
  } else if (f.kind == Kind::kChunk) {
    put64(p, f.offset);
  } else if (f.kind == Kind::kGrant) {
    put64(p, f.slot);
    put64(p, f.raddrs[0]);
    put64(p, f.keys[0]);
    put64(p, f.capacity);
  } else if (f.kind == Kind::kPut) {
    put64(p, f.grant);
    put64(p, f.inline_mask);
  }
  return static_cast<size_t>(p - out);
}

bool parse_frame(const char* buf, size_t len, Frame* f, std::string* why) {
  auto fail = [&](const std::string& text) {
    *why = text;
    return false;
  };
  if (len < kFixed)
    return fail("frame of " + std::to_string(len) + " bytes is shorter than a header");
  uint32_t magic;
  std::memcpy(&magic, buf, 4);
  if (magic != kMagic) return fail("bad magic");
  if (static_cast<uint8_t>(buf[4]) != kVersion)
    return fail("protocol version " + std::to_string(static_cast<uint8_t>(buf[4])));
  uint8_t kind = static_cast<uint8_t>(buf[5]);
  if (kind < 1 || kind > 7) return fail("unknown frame kind " + std::to_string(kind));
  f->kind = static_cast<Kind>(kind);
  f->nseg = static_cast<uint8_t>(buf[6]);
  bool lens = has_lens(f->kind);
  if (lens ? (f->nseg < 1 || f->nseg > kMaxSegments) : f->nseg != 0)
    return fail(std::to_string(f->nseg) + " segments");
  size_t hdr = header_size(f->kind, f->nseg);
  if (len < hdr)
    return fail("frame of " + std::to_string(len) + " bytes is shorter than its header");
  const char* p = buf + 8;
  f->stream = get64(p);
  f->seq = get64(p);
  f->total = 0;
  for (size_t i = 0; lens && i < f->nseg; ++i) {
    f->lens[i] = get64(p);
    if (f->lens[i] > (uint64_t{1} << 48) || f->total + f->lens[i] < f->total)
      return fail("segment length " + std::to_string(f->lens[i]) + " out of range");
    f->total += f->lens[i];
  }
  uint64_t inline_bytes = 0, remote_bytes = 0;
  if (f->kind == Kind::kRts || f->kind == Kind::kPut) {
    if (f->kind == Kind::kRts)
      f->xfer = get64(p);
    else
      f->grant = get64(p);
    f->inline_mask = get64(p);
    if (f->inline_mask >> f->nseg)
      return fail("inline mask names segments beyond " + std::to_string(f->nseg));
    if (f->kind == Kind::kRts) {
      f->slot = get64(p);
      f->grant = get64(p);
      for (size_t i = 0; i < f->nseg; ++i) f->raddrs[i] = get64(p);
      for (size_t i = 0; i < f->nseg; ++i) f->keys[i] = get64(p);
    }
    for (size_t i = 0; i < f->nseg; ++i)
      (f->inline_mask >> i & 1 ? inline_bytes : remote_bytes) += f->lens[i];
  } else if (f->kind == Kind::kChunk) {
    f->offset = get64(p);
  } else if (f->kind == Kind::kGrant) {
    f->slot = get64(p);
    f->raddrs[0] = get64(p);
    f->keys[0] = get64(p);
    f->capacity = get64(p);
  }
  f->payload = buf + hdr;
  f->payload_len = len - hdr;
  switch (f->kind) {
    case Kind::kHello:
      if (f->payload_len < 1 || f->payload_len > kMaxNameBytes)
        return fail("hello with a name of " + std::to_string(f->payload_len) + " bytes");
      break;
    case Kind::kEager:
      if (f->payload_len != f->total)
        return fail("payload of " + std::to_string(f->payload_len) + " bytes, lengths say " +
                    std::to_string(f->total));
      break;
    case Kind::kRts:
    case Kind::kPut:
      if (f->payload_len != inline_bytes)
        return fail("inline payload of " + std::to_string(f->payload_len) + " bytes, lengths say " +
                    std::to_string(inline_bytes));
      if (remote_bytes == 0) return fail("request to send with nothing to read");
      break;
    case Kind::kFin:
      if (f->payload_len != 0) return fail("trailing bytes");
      break;
    case Kind::kGrant:
      if (f->payload_len != 0) return fail("trailing bytes");
      if (f->slot == 0 || f->capacity == 0) return fail("grant without slot or capacity");
      break;
    case Kind::kChunk:
      if (f->payload_len == 0 || f->offset > f->total || f->payload_len > f->total - f->offset)
        return fail("chunk [" + std::to_string(f->offset) + ", +" + std::to_string(f->payload_len) +
                    ") outside a message of " + std::to_string(f->total) + " bytes");
      break;
  }
  return true;
}

}  // namespace caravan::rendezvous
