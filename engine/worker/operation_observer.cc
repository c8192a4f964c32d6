#include "engine/worker/operation_observer.h"

#include <algorithm>
#include <chrono>

#include "engine/base/dtype.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/worker/operation.h"

namespace caravan {

TimelineObserver::TimelineObserver(std::unique_ptr<Timeline> timeline,
                                   std::vector<std::string> servers)
    : timeline_(std::move(timeline)), servers_(std::move(servers)) {}

void TimelineObserver::submitted(Operation& op) {
  op.step = timeline_->next_step(op.tensor().name);
  op.traced = timeline_->traced(op.step);
  if (op.traced) timeline_->begin(op.step);
}

void TimelineObserver::stage(Operation& op, size_t index, const char* name, int64_t from_us,
                             int64_t to_us) {
  const Partition& part = op.partition(index);
  const std::string& tensor = op.tensor().name;
  timeline_->add(
      name, tensor, from_us, to_us,
      "\"tensor\":" + Timeline::json_string(tensor) + ",\"key\":\"" + std::to_string(part.key) +
          "\",\"partition\":" + std::to_string(index) + ",\"bytes\":" + std::to_string(part.bytes) +
          ",\"priority\":" + std::to_string(op.priority()) +
          ",\"peer\":" + Timeline::json_string(servers_[static_cast<size_t>(part.server)]) +
          ",\"step\":" + std::to_string(op.step) + ",\"op\":\"" + op.what() + "\"");
}

void TimelineObserver::sent(Operation& op, size_t index) {
  if (!op.traced) return;
  PartitionFlight::Moments m = op.moments(index);
  stage(op, index, "queue", m.queued_us, m.send_us);
  stage(op, index, "push", m.send_us, m.sent_us);
}

void TimelineObserver::stored(Operation& op, size_t index) {
  if (!op.traced) return;
  PartitionFlight::Moments m = op.moments(index);
  // The pull: from the push leaving to the sum arriving (the server's wait
  // for the other workers, its summation, the answer on the wire). A sum
  // can arrive before the van reports the push sent; then it is empty.
  int64_t answered = std::max(m.sent_us, m.answer_us);
  stage(op, index, "pull", m.sent_us, answered);
  stage(op, index, "copy back", answered, Timeline::now_us());
}

void TimelineObserver::ended(Operation& op) {
  if (op.traced) timeline_->end();
}

void TimelineObserver::stager_hooks(
    const std::shared_ptr<Operation>& op,
    std::function<void(const char*, size_t, int64_t, int64_t)>* trace,
    std::function<void()>* done) {
  if (!op->traced) return;
  // The stager's copies back end after the operation does: the window
  // stays open for them until it says it is done.
  timeline_->begin(op->step);
  *trace = [this, op](const char* name, size_t index, int64_t from_us, int64_t to_us) {
    stage(*op, index, name, from_us, to_us);
  };
  *done = [this] { timeline_->end(); };
}

void MetricsObserver::ended(Operation& op) {
  if (Log::verbose() >= 2) {
    // The first partition's sum arriving before the last partition left
    // shows pulls overlapping pushes.
    int64_t first_answer = -1, last_sent = -1;
    for (size_t i = 0; i < op.partitions(); ++i) {
      PartitionFlight::Moments m = op.moments(i);
      if (m.answer_us && (first_answer < 0 || m.answer_us < first_answer))
        first_answer = m.answer_us;
      if (m.sent_us > last_sent) last_sent = m.sent_us;
    }
    auto since = [&](int64_t us) { return us < 0 ? -1 : us - op.submitted_us(); };
    CARAVAN_VLOG(2) << op.what() << ": '" << op.tensor().name << "' done: " << op.partitions()
                    << " partitions, first sum back after " << since(first_answer)
                    << " us, last partition sent after " << since(last_sent) << " us";
  }
  if (!op.ok()) return;
  metrics::Registry& m = metrics::registry();
  m.operations.add();
  m.operation_bytes.add(op.tensor().count * dtype_size(op.tensor().dtype));
  m.operation_seconds.observe(
      std::chrono::duration<double>(Operation::Clock::now() - op.submitted()).count());
}

}  // namespace caravan
