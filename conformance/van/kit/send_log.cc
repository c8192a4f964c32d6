#include "send_log.h"

namespace caravan::van_check {

SendLog::Slot* SendLog::open(Ticket* ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (ticket) *ticket = slots_.size();
  slots_.emplace_back();
  slots_.back().log = this;
  return &slots_.back();
}

void SendLog::accepted(Slot* slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  slot->accepted = true;
}

void SendLog::complete(Slot* slot, caravan_status status) {
  SendLog* log = slot->log;
  std::lock_guard<std::mutex> lock(log->mutex_);
  slot->status = status;
  ++slot->completions;
  ++log->completions_;
  log->changed_.notify_all();
}

size_t SendLog::accepted_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const Slot& s : slots_) n += s.accepted;
  return n;
}

size_t SendLog::completion_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completions_;
}

int SendLog::completions(Ticket t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return t < slots_.size() ? slots_[t].completions : 0;
}

caravan_status SendLog::status(Ticket t) {
  std::lock_guard<std::mutex> lock(mutex_);
  return t < slots_.size() ? slots_[t].status : CARAVAN_STATUS_TIMEOUT;
}

bool SendLog::wait(Ticket t, Clock::duration patience) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, patience,
                           [&] { return t < slots_.size() && slots_[t].completions > 0; });
}

bool SendLog::wait_all(Clock::duration patience) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, patience, [&] {
    for (const Slot& s : slots_)
      if (s.accepted && s.completions == 0) return false;
    return true;
  });
}

}  // namespace caravan::van_check
