// The CARAVAN_JOB_TOKEN challenge between a node and the scheduler
// (docs/job-token.md): the node's side, run by join() before it registers.
#include <chrono>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/net.h"
#include "engine/control/scheduler_link.h"

namespace caravan {

// On the control thread, the only one that uses auth_ after join() made it.
void SchedulerLink::on_auth_message(const ControlMessage& msg) {
  if (!auth_) {
    fail("the scheduler at " + scheduler_name() + " sent " + control_type_name(msg.head.type) +
             ", but this node has no CARAVAN_JOB_TOKEN: set the job's CARAVAN_JOB_TOKEN on "
             "every node",
         CARAVAN_ERR_CONFIG);
    return;
  }
  AuthInitiator::Step step = auth_->on_message(msg);
  if (!step.error.empty()) {
    fail("the scheduler at " + scheduler_name() +
             " failed the CARAVAN_JOB_TOKEN challenge: " + step.error,
         CARAVAN_ERR_CONFIG);
    return;
  }
  if (step.reply) hub_.send(conn_, step.reply->head, control_body(*step.reply));
  if (step.done) {
    std::lock_guard<std::mutex> lock(mu_);
    authenticated_ = true;
    cv_.notify_all();
  }
}

void SchedulerLink::authenticate(long long deadline_ms) {
  ControlMessage hello = auth_->hello();
  if (!hub_.send(conn_, hello.head, control_body(hello)))
    throw Error(CARAVAN_ERR_PEER_LOST, "the scheduler at " + scheduler_name() +
                                           " closed the connection before the CARAVAN_JOB_TOKEN "
                                           "challenge began");
  std::unique_lock<std::mutex> lock(mu_);
  bool ok = cv_.wait_until(
      lock,
      std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms - net::now_ms()),
      [&] { return authenticated_ || !failure_.empty() || attempt_lost_; });
  if (!failure_.empty()) throw Error(failure_code_, failure_);
  if (attempt_lost_)
    throw Error(CARAVAN_ERR_PEER_LOST, "the scheduler at " + scheduler_name() +
                                           " closed the connection during the "
                                           "CARAVAN_JOB_TOKEN challenge");
  if (!ok)
    throw Error(CARAVAN_ERR_TIMEOUT, "the scheduler at " + scheduler_name() +
                                         " did not answer the CARAVAN_JOB_TOKEN challenge within " +
                                         std::to_string(config_.connect_timeout_s) +
                                         " s (CARAVAN_CONNECT_TIMEOUT)");
  CARAVAN_VLOG(1) << "the scheduler at " << scheduler_name()
                  << " and this node proved to each other that they have CARAVAN_JOB_TOKEN";
}

}  // namespace caravan
