#include <deque>

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

 private:
  std::deque<PendingSend> queue_;
};

}  // namespace

std::unique_ptr<Scheduler> make_fifo_scheduler() { return std::make_unique<FifoScheduler>(); }

}  // namespace caravan
