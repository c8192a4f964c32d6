// The Customers of one ps-lite node (a KVWorker's, KVServer's or
// SimpleApp's receiving end), by (app_id, customer_id); the messages that
// came for one the program has not made yet; and the buffers a server
// registered for pushes (RegisterRecvBuffer). Its lock is held while a
// message is handed to a customer, so a ~Customer, which removes itself
// under it, never frees one in the middle of Accept. Taken before a
// customer's own lock, never after.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "ps/internal/customer.h"
#include "ps/internal/message.h"
#include "ps/sarray.h"

namespace caravan::psl {

class Customers {
 public:
  using Key = std::pair<int, int>;  // (app_id, customer_id)

  // Throws ps-lite's error when (app, customer) exists; hands the new one
  // the messages that waited for it.
  void add(ps::Customer* c);
  void remove(ps::Customer* c);
  ps::Customer* find(int app_id, int customer_id) const;
  bool empty() const;
  // Adds no response to no request in each: wakes their waiters (which
  // then see the job's failure).
  void wake_all();
  // Hands the message to its customer, or keeps it for when the program
  // makes it: true when it is the first kept for `key`.
  bool deliver(const Key& key, ps::Message&& msg);
  // Waits up to `wait` for the messages kept for `key` to find their
  // customer; false when they still wait.
  bool claimed_within(const Key& key, std::chrono::seconds wait);

  // RegisterRecvBuffer: where pushes of `key` from node `sender` land.
  void register_buffer(int sender, uint64_t key, const ps::SArray<char>& buf);
  // Whether a buffer is registered for (sender, key); if so, `buf` is it.
  bool registered(int sender, uint64_t key, ps::SArray<char>* buf) const;

 private:
  mutable std::mutex mu_;
  std::map<Key, ps::Customer*> customers_;
  std::map<Key, std::vector<ps::Message>> early_;
  std::condition_variable claimed_;  // early_ lost an entry
  std::map<std::pair<int, uint64_t>, ps::SArray<char>> receive_into_;
};

}  // namespace caravan::psl
