// Memory the engine lent for messages it expects (van_v2.h, lend and
// unlend), by slot. A message whose frame names a lent slot, with the lent
// segment's exact length, is read straight into that memory, so the engine
// need not copy it there.
//
// Two locks: the table's, for lending, claiming and taking back; and one
// per lend, which the poller holds while it writes into the lent memory and
// unlend takes to move what is there into the van's own. So once unlend
// returns, nothing more is written to the engine's buffer.
#ifndef CARAVAN_VAN_TCP_LENDING_H
#define CARAVAN_VAN_TCP_LENDING_H

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace caravan::van_tcp {

struct Lend {
  ~Lend();
  unsigned char* const buf;
  const size_t len;
  const size_t segment;
  Lend(unsigned char* b, size_t n, size_t seg) : buf(b), len(n), segment(seg) {}

  std::mutex mu;  // held while the segment's bytes are written or moved
  // Set while unlend waits for mu: the poller, which would take mu again at
  // once for its next read, waits on cv instead and lets unlend in.
  std::atomic<bool> revoking{false};
  std::condition_variable cv;
  bool taken = false;              // a message is being read into it (set under the table's lock)
  bool handed_out = false;         // poll() has returned that message: it stays where it is
  unsigned char* moved = nullptr;  // where unlend moved the segment; owned
  // unlend found no memory to move it to: the rest of the segment is
  // read and thrown away, and the message dropped.
  bool dead = false;

  // Where the segment's bytes are now, null when dead; under mu.
  unsigned char* where() const { return dead ? nullptr : moved ? moved : buf; }
  // The poller's lock for writing the segment's bytes.
  std::unique_lock<std::mutex> lock_for_writing();
};

class Lending {
 public:
  // A new lend on a slot replaces the old one, which is taken back first.
  void lend(uint64_t slot, size_t segment, void* buf, size_t len);
  void unlend(uint64_t slot);
  // The poller, starting a message on `slot` with these segment lengths:
  // the lend it takes, or null.
  std::shared_ptr<Lend> claim(uint64_t slot, const uint64_t* lens, size_t num_segments);
  // A message that took the lend ends. Not handed out (its connection
  // closed mid-message, or it was dropped), the lend is still in the table
  // and the next message on the slot may take it; handed out, hand_out has
  // already removed it and this does nothing.
  void unclaim(uint64_t slot, const std::shared_ptr<Lend>& lend);
  // The poller, handing a message out of poll(): its lend is over. Returns
  // where its segment is, for the event; null when the message must be
  // dropped (dead).
  unsigned char* hand_out(uint64_t slot, const std::shared_ptr<Lend>& lend);

 private:
  // Moves a taken lend's bytes into the van's memory; the lend is already
  // out of the table.
  static void take_back(Lend& lend);

  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Lend>> by_slot_;
};

}  // namespace caravan::van_tcp

#endif  // CARAVAN_VAN_TCP_LENDING_H
