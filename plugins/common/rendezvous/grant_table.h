// The remote-buffer cache, both halves of it. A receiver lends a stream a
// receive buffer for one slot (kGrant); the stream's sender writes its
// next large message of that slot straight into it and says so (kPut).
// A grant is used once and lent again after each release; lent buffers are
// bounded by cache_bytes, and a receiver takes one back only when the
// sender hands it back unused (too small) in a request to send, since the
// sender may be writing into it at any other time.
//
// Under the protocol lock.
#ifndef CARAVAN_RENDEZVOUS_GRANT_TABLE_H
#define CARAVAN_RENDEZVOUS_GRANT_TABLE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>

#include "rendezvous/message.h"
#include "rendezvous/pool.h"

namespace caravan::rendezvous {

// A receive buffer this side lent to one stream for one slot. Only the
// sender writes it until its notice comes; then the message holds it, and
// once released it is lent again.
struct Grant {
  uint64_t id = 0;
  Source* src = nullptr;
  uint64_t slot = 0;
  Buffer* buf = nullptr;
  bool busy = false;  // a message written into it is not yet released
};

// A buffer a peer lent one of this side's streams: where the next message
// of a slot may be written.
struct RemoteGrant {
  uint64_t id = 0;
  uint64_t raddr = 0;
  uint64_t key = 0;
  uint64_t capacity = 0;
};

class GrantTable {
 public:
  explicit GrantTable(size_t cache_bytes) : cache_bytes_(cache_bytes) {}

  // Receiving half. As a message m holding a pooled buffer is released:
  // lends that buffer for m's slot when the slot has none lent yet and the
  // cache has room, or lends it again when it came through the cache. The
  // grant to announce, or nullptr (the buffer goes back to the pool).
  const Grant* lend(const InMsg& m);
  // A write notice: grant `id`, when it is lent to src, not in use and
  // large enough for `total` bytes, now in use; nullptr otherwise.
  Grant* claim(uint64_t id, const Source* src, uint64_t total);
  // A grant the sender of `stream` hands back unused: nothing writes it
  // any more. Its buffer, for the pool, or nullptr when it is not one to
  // take back.
  Buffer* take_back(uint64_t stream, uint64_t id);

  // Sending half. Keeps a grant for `stream`'s next message of `slot`.
  void offer(uint64_t stream, uint64_t slot, const RemoteGrant& g);
  // Takes the grant for stream and slot out; false when there is none.
  bool take_offer(uint64_t stream, uint64_t slot, RemoteGrant* out);
  // A stream disconnected: its peer keeps the buffers until it finalizes.
  void forget_offers(uint64_t stream);

  // After close() nothing is lent again.
  void close() { closed_ = true; }
  void clear();
  size_t lent() const { return lent_; }
  size_t lent_bytes() const { return lent_bytes_; }

 private:
  using StreamSlot = std::pair<uint64_t, uint64_t>;
  size_t cache_bytes_;
  bool closed_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, Grant> grants_;  // lent, by id
  std::map<StreamSlot, uint64_t> grant_of_;     // lent, by the stream and slot it is lent to
  std::map<StreamSlot, RemoteGrant> offers_;    // lent to us, by our stream and slot
  size_t lent_ = 0;
  size_t lent_bytes_ = 0;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_GRANT_TABLE_H
