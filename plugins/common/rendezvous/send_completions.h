// Where the rendezvous protocol says that a send is over: the caller's
// memory is free again and the send ended with a status. Every finished
// send passes through SendCompletions::finished(), and only report() tells
// the van's caller, so the van ABI's way of telling it (a callback run on
// the reporting thread, in ABI 1) is written here and nowhere else.
//
// Finished sends are gathered under the protocol lock and reported once it
// is released: the caller may send again from inside the report.
#ifndef CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H
#define CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H

#include <vector>

#include "caravan/plugin/van_v1.h"

namespace caravan::rendezvous {

// Whom to tell that a send is over: what the van's caller passed to send().
struct SendTicket {
  caravan_send_done_fn fn = nullptr;
  void* cookie = nullptr;
};

class SendCompletions {
 public:
  // Under the protocol lock. A ticket without a function is ignored.
  void finished(SendTicket ticket, caravan_status status);
  // Under the protocol lock: the sends finished so far, to report() once
  // the lock is released.
  SendCompletions take();
  bool empty() const { return finished_.empty(); }
  // With no lock held: tells each caller, in the order the sends finished.
  void report();

 private:
  struct Finished {
    SendTicket ticket;
    caravan_status status;
  };
  std::vector<Finished> finished_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_SEND_COMPLETIONS_H
