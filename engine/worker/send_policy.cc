#include "engine/worker/send_policy.h"

#include <deque>
#include <queue>
#include <vector>

namespace caravan {
namespace {

class FifoSendPolicy final : public SendPolicy {
 public:
  void add(PendingSend item) override { queue_.push_back(std::move(item)); }
  std::optional<PendingSend> next() override {
    if (queue_.empty()) return std::nullopt;
    PendingSend p = std::move(queue_.front());
    queue_.pop_front();
    return p;
  }
  void finished() override {}

 private:
  std::deque<PendingSend> queue_;
};

class PrioritySendPolicy final : public SendPolicy {
 public:
  explicit PrioritySendPolicy(int credit) : credit_(credit) {}
  void add(PendingSend item) override { queue_.push(std::move(item)); }
  std::optional<PendingSend> next() override {
    if (queue_.empty() || in_flight_ >= credit_) return std::nullopt;
    PendingSend p = queue_.top();
    queue_.pop();
    ++in_flight_;
    return p;
  }
  void finished() override {
    if (in_flight_ > 0) --in_flight_;
  }

 private:
  struct Later {
    bool operator()(const PendingSend& a, const PendingSend& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.sequence > b.sequence;
    }
  };
  int credit_;
  int in_flight_ = 0;
  std::priority_queue<PendingSend, std::vector<PendingSend>, Later> queue_;
};

}  // namespace

std::unique_ptr<SendPolicy> make_fifo_send_policy() { return std::make_unique<FifoSendPolicy>(); }

std::unique_ptr<SendPolicy> make_priority_send_policy(int credit) {
  return std::make_unique<PrioritySendPolicy>(credit);
}

std::unique_ptr<SendPolicy> make_send_policy(int credit) {
  return credit > 0 ? make_priority_send_policy(credit) : make_fifo_send_policy();
}

}  // namespace caravan
