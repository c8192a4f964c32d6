// Where the rendezvous protocol says that a send is over: the caller's
// memory is free again and the send ended with a status. Every finished
// send passes through SendCompletions::finished(), and only report() hands
// it on, as a SENT event (van_v2.h) into the inbox that poll() empties.
//
// Finished sends are gathered under the protocol lock and reported once it
// is released, since the inbox's lock comes after the protocol lock.
#ifndef CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H
#define CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H

#include <cstdint>
#include <vector>

#include "caravan/plugin/van_v2.h"

namespace caravan::rendezvous {

class Inbox;

// Which send of the van's caller this is; none for the protocol's own
// frames, whose end nobody waits for.
struct SendTicket {
  uint64_t send_id = 0;
  bool wanted = false;
};

class SendCompletions {
 public:
  // Under the protocol lock. A ticket nobody wants is ignored.
  void finished(SendTicket ticket, caravan_status status);
  // Under the protocol lock: the sends finished so far, to report() once
  // the lock is released.
  SendCompletions take();
  bool empty() const { return finished_.empty(); }
  // With no lock held: queues a SENT event for each in `inbox`, in the
  // order the sends finished, and wakes its poller.
  void report(Inbox& inbox);

 private:
  std::vector<caravan_van_event_v2> finished_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H
