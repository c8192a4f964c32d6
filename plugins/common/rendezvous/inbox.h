// Received messages handed over in each stream's order and waiting for
// recv(), and those the application holds until release(). It has its own
// lock, taken after the protocol lock when both are held, so recv()
// callers wait here and never hold up the progress thread.
#ifndef CARAVAN_RENDEZVOUS_INBOX_H
#define CARAVAN_RENDEZVOUS_INBOX_H

#include <condition_variable>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "caravan/plugin/van_v1.h"
#include "rendezvous/message.h"

namespace caravan::rendezvous {

class Inbox {
 public:
  Inbox() = default;
  ~Inbox() { clear(); }
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // Any thread: the next message, waiting up to timeout_ms (forever when
  // negative). TIMEOUT when none came, CLOSED once close() was called.
  // Throws plugin::Error when out is missing or too small.
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  // Takes msgs (clearing it) and wakes recv() callers.
  void add(std::vector<InMsg*>& msgs);
  // A message recv() handed out, back from the application; throws
  // plugin::Error when it is not one.
  InMsg* take_back(const caravan_van_message_v1* msg);
  // Wakes recv() callers with CLOSED and waits until they have left.
  void close();
  // Deletes every message, waiting or held.
  void clear();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  int in_recv_ = 0;
  std::deque<InMsg*> ready_;
  std::unordered_set<InMsg*> held_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_INBOX_H
