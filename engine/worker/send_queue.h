// The partitions waiting to go on the wire, in the order the SendPolicy
// chooses (BYTEPS_SCHEDULING_CREDIT), shared by the threads that submit and
// the receiving thread that frees credit. It only hands sends out; the
// client runs them (PushPullClient::pump), so a push goes down the layers
// without coming back up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/worker/send_policy.h"

namespace caravan {

class SendQueue {
 public:
  explicit SendQueue(int scheduling_credit) : policy_(make_send_policy(scheduling_credit)) {}

  // Queues `send` at `priority` (higher first where the policy cares).
  void add(int priority, std::function<void()> send);
  // The next send the policy lets go now, or nothing.
  std::optional<PendingSend> next();
  // A send next() handed out has left the van (or failed): its credit
  // returns.
  void finished();

 private:
  std::mutex mu_;
  std::unique_ptr<SendPolicy> policy_;
  uint64_t sequence_ = 0;
};

}  // namespace caravan
