// The van's events waiting for poll() (van_v2.h): received messages, handed
// over in each stream's order, and finished sends; and the messages the
// application holds until release(). It has its own lock, taken after the
// protocol lock when both are held, so a poll() waits here and never holds
// up the progress thread.
#ifndef CARAVAN_RENDEZVOUS_INBOX_H
#define CARAVAN_RENDEZVOUS_INBOX_H

#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "rendezvous/message.h"

namespace caravan::rendezvous {

class Inbox {
 public:
  Inbox() = default;
  ~Inbox() { clear(); }
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // One thread at a time: waits up to timeout_ms (forever when negative)
  // for events and writes up to `capacity`, finished sends first. TIMEOUT
  // when none came or interrupt() was called, CLOSED once close() was.
  caravan_status poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity, size_t* n);
  // Takes msgs (clearing it) and wakes the poller.
  void add(std::vector<InMsg*>& msgs);
  // Takes SENT events (clearing them) and wakes the poller.
  void add_sent(std::vector<caravan_van_event_v2>& sent);
  // Makes poll() return now, or the next one at once.
  void interrupt();
  // A message poll() handed out, back from the application; throws
  // plugin::Error when it is not one.
  InMsg* take_back(const caravan_van_message_v2* msg);
  // Wakes the poller with CLOSED and waits until it has left.
  void close();
  // Deletes every message, waiting or held.
  void clear();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool interrupted_ = false;
  int in_poll_ = 0;
  std::deque<InMsg*> ready_;
  std::deque<caravan_van_event_v2> sent_;
  std::unordered_set<InMsg*> held_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_INBOX_H
