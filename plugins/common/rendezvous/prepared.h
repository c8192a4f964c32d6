// A large message made ready to go by request to send or by writes into a
// lent buffer: its remote segments copied into a staging buffer or
// registered where they lie, its small segments copied after a request to
// send's header in its frame. Private to the library.
#ifndef CARAVAN_RENDEZVOUS_PREPARED_H
#define CARAVAN_RENDEZVOUS_PREPARED_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "rendezvous/config.h"
#include "rendezvous/frame.h"
#include "rendezvous/registered_memory.h"

namespace caravan::rendezvous {

struct Prepared {
  Buffer* frame = nullptr;
  size_t inline_bytes = 0;
  uint64_t inline_mask = 0;
  uint64_t raddrs[kMaxSegments] = {};
  uint64_t keys[kMaxSegments] = {};
  Buffer* staged = nullptr;        // the remote segments copied, or
  std::vector<Registration> regs;  // the caller's own, registered for this transfer
  size_t charged = 0;              // bytes of regs counted against the send pool
};

// Small segments (headers, keys) travel inline, so that the receiver reads
// only the large ones and every inline segment together still fits a
// frame. Registers the others when cfg.zero_copy (copies them where the
// transport refuses). False when the send pool has no room yet (only with
// may_wait); nothing is held then. Needs no lock.
bool prepare(const std::vector<caravan_segment_v2>& segs, const Config& cfg, RegisteredMemory& mem,
             bool may_wait, Prepared* p);
// Gives back what prepare() took (whatever of it p still holds).
void unprepare(Prepared& p, RegisteredMemory& mem);

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_PREPARED_H
