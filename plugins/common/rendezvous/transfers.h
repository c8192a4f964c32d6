// Requests to send, from their announcement until the receiver's notice
// (kFin) says their remote segments were read: the memory each one's
// reader reads, a staging copy or the caller's own, registered.
//
// After disconnect() the peer may still be reading a zero-copy transfer it
// was told about: its memory is withdrawn (deregistered, so reads fail)
// and its send reported CLOSED only after orphan_grace_ms, unless the
// notice comes first.
//
// Under the protocol lock.
#ifndef CARAVAN_RENDEZVOUS_TRANSFERS_H
#define CARAVAN_RENDEZVOUS_TRANSFERS_H

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rendezvous/config.h"
#include "rendezvous/prepared.h"
#include "rendezvous/registered_memory.h"
#include "rendezvous/send_completions.h"

namespace caravan::rendezvous {

class TransferTable {
 public:
  TransferTable(const Config& cfg, LogFn log, RegisteredMemory& mem, SendCompletions& done);
  TransferTable(const TransferTable&) = delete;
  TransferTable& operator=(const TransferTable&) = delete;

  // A request to send of `stream` is announced: keeps p's staging copy or
  // registrations (p keeps its frame) until the notice. A staged send is
  // over for its caller at once; a zero-copy one once the memory is free.
  // Returns the transfer id the notice will name.
  uint64_t open(uint64_t stream, Prepared& p, SendTicket ticket);
  bool empty() const { return transfers_.empty(); }
  // The transfer's memory is read by no one any more: freed, its send
  // reported with `status`. Nothing when there is no such transfer.
  void settle(uint64_t xfer, caravan_status status);
  // The receiver's notice for `xfer`; false when it names no transfer,
  // not even one withdrawn.
  bool on_notice(uint64_t xfer);
  // `stream` was disconnected: its zero-copy transfers get the grace period.
  void orphan(uint64_t stream);
  // On the progress thread: withdraws orphans whose grace has run out.
  // Deregistering there cannot race the transport serving a read of that
  // memory, since that happens only inside our own calls into it on this
  // thread (or, on hardware, ends with the deregistration).
  void withdraw_due();
  // Settles every transfer with `status`: only once no peer can read any.
  void settle_all(caravan_status status);
  void clear();

 private:
  struct Transfer {
    uint64_t stream = 0;
    Buffer* staged = nullptr;
    std::vector<Registration> regs;
    size_t charged = 0;
    SendTicket ticket;  // with regs: reported once the memory is free
    bool orphan = false;
    std::chrono::steady_clock::time_point withdraw_at{};
  };

  const Config& cfg_;
  LogFn log_;
  RegisteredMemory& mem_;
  SendCompletions& done_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Transfer>> transfers_;  // by id
  std::vector<uint64_t> orphans_;           // transfers of disconnected streams
  std::unordered_set<uint64_t> withdrawn_;  // their notices may still come
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_TRANSFERS_H
