#include "rendezvous/prepared.h"

#include <cstring>

namespace caravan::rendezvous {

bool prepare(const std::vector<caravan_segment_v2>& segs, const Config& cfg, RegisteredMemory& mem,
             bool may_wait, Prepared* p) {
  const size_t inline_max =
      (cfg.eager_bytes - header_size(Kind::kRts, kMaxSegments)) / kMaxSegments;
  size_t remote = 0;
  for (size_t i = 0; i < segs.size(); ++i) {
    if (segs[i].len < inline_max)
      p->inline_mask |= uint64_t{1} << i;
    else
      remote += segs[i].len;
  }
  using Registered = RegisteredMemory::Registered;
  Registered r = cfg.zero_copy
                     ? mem.register_segments(segs, p->inline_mask, may_wait, &p->regs, &p->charged)
                     : Registered::kFailed;
  if (r == Registered::kNoRoom) return false;
  if (r == Registered::kDone) {
    for (size_t i = 0; i < segs.size(); ++i) {
      if (p->inline_mask >> i & 1) continue;
      p->raddrs[i] = p->regs[i].remote_base;
      p->keys[i] = p->regs[i].key;
    }
  } else {
    p->staged = mem.send_pool().acquire(remote, may_wait);
    if (!p->staged) return false;
    size_t off = 0;
    for (size_t i = 0; i < segs.size(); ++i) {
      if (p->inline_mask >> i & 1) continue;
      std::memcpy(p->staged->data + off, segs[i].data, segs[i].len);
      p->raddrs[i] = p->staged->reg.remote_base + off;
      p->keys[i] = p->staged->reg.key;
      off += segs[i].len;
    }
  }
  p->frame = mem.send_pool().acquire(cfg.eager_bytes, false);
  char* out = p->frame->data + header_size(Kind::kRts, segs.size());
  for (size_t i = 0; i < segs.size(); ++i) {
    if (!(p->inline_mask >> i & 1) || segs[i].len == 0) continue;
    std::memcpy(out + p->inline_bytes, segs[i].data, segs[i].len);
    p->inline_bytes += segs[i].len;
  }
  return true;
}

void unprepare(Prepared& p, RegisteredMemory& mem) {
  mem.deregister_segments(&p.regs, &p.charged);
  mem.send_pool().put(p.staged);
  mem.send_pool().put(p.frame);
  p = Prepared{};
}

}  // namespace caravan::rendezvous
