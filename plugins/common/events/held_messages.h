// The received messages a van has handed to the engine and not yet got
// back through release(): release() of one it does not hold is refused, and
// those still held when the instance ends are freed (van_v2.h makes them
// invalid then). The in-tree vans share it; T is a van's own record of a
// message, which its van_token points to.
#ifndef CARAVAN_PLUGINS_COMMON_EVENTS_HELD_MESSAGES_H
#define CARAVAN_PLUGINS_COMMON_EVENTS_HELD_MESSAGES_H

#include <memory>
#include <mutex>
#include <unordered_set>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"

namespace caravan::plugin {

template <class T>
class HeldMessages {
 public:
  HeldMessages() = default;
  HeldMessages(const HeldMessages&) = delete;
  HeldMessages& operator=(const HeldMessages&) = delete;
  ~HeldMessages() { clear(); }

  // Hands a record out: the token the message carries.
  void* hand_out(std::unique_ptr<T> record) {
    std::lock_guard<std::mutex> lock(mu_);
    T* r = record.release();
    held_.insert(r);
    return r;
  }

  // What release() gives back; INVALID_ARGUMENT for a message this van did
  // not hand out or got back already.
  std::unique_ptr<T> take_back(const caravan_van_message_v2* message) {
    if (!message || !message->van_token)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: not a received message");
    T* r = static_cast<T*>(message->van_token);
    std::lock_guard<std::mutex> lock(mu_);
    if (held_.erase(r) == 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "release: message unknown or released twice");
    return std::unique_ptr<T>(r);
  }

  // Frees every record still held.
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    for (T* r : held_) delete r;
    held_.clear();
  }

 private:
  std::mutex mu_;
  std::unordered_set<T*> held_;
};

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGINS_COMMON_EVENTS_HELD_MESSAGES_H
