// The completions of one van instance's sends, by ticket. VanInstance
// feeds it; tests read it through VanInstance, never through the van.
// The instance's polling thread records completions while tests wait on
// other threads, so everything here is under one mutex and waits block on
// a condition.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

#include "caravan/plugin/plugin.h"

namespace caravan::van_check {

using Clock = std::chrono::steady_clock;

// Names one send of one instance: its place in the order the test sent.
using Ticket = size_t;

class SendLog {
 public:
  // A slot for the next send; the pointer stays valid for the log's life
  // (its address is the send's id for the van).
  struct Slot {
    SendLog* log = nullptr;
    bool accepted = false;
    int completions = 0;
    caravan_status status = CARAVAN_STATUS_TIMEOUT;
  };
  Slot* open(Ticket* ticket);
  void accepted(Slot* slot);
  // Records one completion; called by the polling thread.
  static void complete(Slot* slot, caravan_status status);

  size_t accepted_count();
  size_t completion_count();
  int completions(Ticket t);
  caravan_status status(Ticket t);
  bool wait(Ticket t, Clock::duration patience);
  bool wait_all(Clock::duration patience);

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Slot> slots_;  // a deque: growing never moves a slot
  size_t completions_ = 0;
};

}  // namespace caravan::van_check
