#include "rendezvous/send_completions.h"

#include <cstring>
#include <utility>

#include "rendezvous/inbox.h"

namespace caravan::rendezvous {

void SendCompletions::finished(SendTicket ticket, caravan_status status) {
  if (!ticket.wanted) return;
  caravan_van_event_v2 e;
  std::memset(&e, 0, sizeof e);
  e.type = CARAVAN_VAN_EVENT_SENT;
  e.status = status;
  e.send_id = ticket.send_id;
  finished_.push_back(e);
}

SendCompletions SendCompletions::take() {
  SendCompletions out;
  out.finished_.swap(finished_);
  return out;
}

void SendCompletions::report(Inbox& inbox) { inbox.add_sent(finished_); }

}  // namespace caravan::rendezvous
