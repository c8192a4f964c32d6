#include "rendezvous/send_completions.h"

#include <utility>

namespace caravan::rendezvous {

void SendCompletions::finished(SendTicket ticket, caravan_status status) {
  if (ticket.fn) finished_.push_back({ticket, status});
}

SendCompletions SendCompletions::take() {
  SendCompletions out;
  out.finished_.swap(finished_);
  return out;
}

void SendCompletions::report() {
  for (const Finished& f : finished_) f.ticket.fn(f.ticket.cookie, f.status);
  finished_.clear();
}

}  // namespace caravan::rendezvous
