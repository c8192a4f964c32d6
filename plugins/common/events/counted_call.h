// A call into a van instance, counted so that finalize can wait for every
// call inside to leave before it tears the instance down; refused with
// CLOSED once finalize has begun. Van has mu_, cv_, calls_ and closing_
// (finalize sets closing_ under mu_, then waits on cv_ for calls_ == 0) and
// befriends CountedCall<Van>.
#pragma once

#include <mutex>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin {

template <class Van>
class CountedCall {
 public:
  explicit CountedCall(Van& van) : van_(van) {
    std::lock_guard<std::mutex> lock(van_.mu_);
    if (van_.closing_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
    ++van_.calls_;
  }
  ~CountedCall() {
    std::lock_guard<std::mutex> lock(van_.mu_);
    if (--van_.calls_ == 0) van_.cv_.notify_all();
  }
  CountedCall(const CountedCall&) = delete;
  CountedCall& operator=(const CountedCall&) = delete;

 private:
  Van& van_;
};

}  // namespace caravan::plugin
