#include "engine/worker/send_queue.h"

namespace caravan {

void SendQueue::add(int priority, std::function<void()> send) {
  std::lock_guard<std::mutex> lock(mu_);
  policy_->add(PendingSend{priority, sequence_++, std::move(send)});
}

std::optional<PendingSend> SendQueue::next() {
  std::lock_guard<std::mutex> lock(mu_);
  return policy_->next();
}

void SendQueue::finished() {
  std::lock_guard<std::mutex> lock(mu_);
  policy_->finished();
}

}  // namespace caravan
