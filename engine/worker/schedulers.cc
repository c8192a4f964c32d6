#include <deque>
#include <queue>
#include <vector>

#include "engine/worker/scheduler.h"

namespace caravan {
namespace {

class FifoScheduler final : public Scheduler {
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

class PriorityScheduler final : public Scheduler {
 public:
  explicit PriorityScheduler(int credit) : credit_(credit) {}
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

std::unique_ptr<Scheduler> make_fifo_scheduler() { return std::make_unique<FifoScheduler>(); }

std::unique_ptr<Scheduler> make_priority_scheduler(int credit) {
  return std::make_unique<PriorityScheduler>(credit);
}

std::unique_ptr<Scheduler> make_scheduler(int credit) {
  return credit > 0 ? make_priority_scheduler(credit) : make_fifo_scheduler();
}

}  // namespace caravan
