#include "engine/control/scheduler_link.h"

#include <chrono>
#include <cstdio>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/net.h"

namespace caravan {

SchedulerLink::SchedulerLink(const JobConfig& config, FailureHandler on_failure)
    : config_(config),
      on_failure_(std::move(on_failure)),
      hub_(
          ControlReceiver::kNode, [this](int, ControlMessage&& m) { on_message(std::move(m)); },
          [this](int, const std::string& why) { on_lost(why); }),
      heartbeat_(config.heartbeat_interval_s,
                 [this](bool after_stall) { on_heartbeat_tick(after_stall); }) {}

std::string SchedulerLink::silence_note() const {
  if (config_.heartbeat_interval_s <= 0) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_ || !heard_) return "";
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  last_seen_)
                .count();
  if (ms <= 1000LL * config_.heartbeat_interval_s) return "";
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(ms) / 1000);
  return "the scheduler at " + scheduler_name() + " has been silent for " + seconds +
         " s as well (PS_HEARTBEAT_INTERVAL=" + std::to_string(config_.heartbeat_interval_s) +
         ", PS_HEARTBEAT_TIMEOUT=" + std::to_string(config_.heartbeat_timeout_s) +
         "): its loss may be the cause";
}

void SchedulerLink::on_heartbeat_tick(bool after_stall) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_ || !failure_.empty()) return;
  // Orphaned: nobody to tell until a report went out, and no silence to
  // judge until a scheduler took the job over.
  if (orphaned_ && !reported_) return;
  if (!lost_joining_.empty() || registering_again_) return;
  auto silent = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                 last_seen_)
                    .count();
  if (!orphaned_ && !after_stall && silent >= config_.heartbeat_timeout_s) {
    std::string why =
        "the scheduler at " + scheduler_name() + " has been silent for " + std::to_string(silent) +
        " s (PS_HEARTBEAT_TIMEOUT=" + std::to_string(config_.heartbeat_timeout_s) + ")";
    int silent_conn = conn_;
    if (orphan(why) || lose_while_joining(why)) {
      lock.unlock();
      hub_.close(silent_conn);  // without on_lost: this node has moved on
      return;
    }
    lock.unlock();
    fail(why);
    return;
  }
  lock.unlock();
  wire::Header h;
  h.type = wire::Type::kHeartbeat;
  h.sender = my_id_;
  hub_.send(conn_, h, {});
}

SchedulerLink::~SchedulerLink() { close(); }

std::string SchedulerLink::scheduler_name() const {
  return config_.root_uri + ":" + std::to_string(config_.root_port);
}

std::string SchedulerLink::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

int SchedulerLink::failure_code() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_.empty() ? 0 : failure_code_;
}

bool SchedulerLink::wait_regrouped(std::chrono::milliseconds deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  auto over = [&] { return !failure_.empty() || closing_; };
  // No scheduler (CARAVAN_ELASTIC: lost): only the next one can regroup
  // the job without the lost peer. Wait for it to take the job over (the
  // reconnecting fails the link after CARAVAN_RESUME_TIMEOUT), then for
  // its word.
  while (cv_.wait_for(lock, deadline, [&] { return over() || orphaned_; }) && !over())
    cv_.wait(lock, [&] { return over() || !orphaned_; });
  return !failure_.empty() && failure_code_ == CARAVAN_ERR_REGROUPED;
}

void SchedulerLink::on_lost(const std::string& why) {
  std::string hint;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (orphaned_ || registering_again_) {  // a reconnect attempt's connection
      attempt_lost_ = true;
      cv_.notify_all();
      return;
    }
    if (orphan("lost the connection to the scheduler at " + scheduler_name() + ": " + why)) return;
    if (lose_while_joining("lost the connection to the scheduler at " + scheduler_name() + ": " +
                           why))
      return;
    // A scheduler that cannot take part in the challenge (an older build)
    // drops the connection at the first AUTH message.
    if (auth_ && !authenticated_)
      hint =
          " before the CARAVAN_JOB_TOKEN challenge was complete (is the scheduler a Caravan "
          "build that knows CARAVAN_JOB_TOKEN?)";
  }
  fail("lost the connection to the scheduler at " + scheduler_name() + ": " + why + hint);
}

void SchedulerLink::fail(const std::string& why, int code) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_ || !failure_.empty()) return;
    failure_ = why;
    failure_code_ = code;
    cv_.notify_all();
  }
  // A regroup is the job going on: the node says what it does next.
  if (code != CARAVAN_ERR_REGROUPED) {
    CARAVAN_LOG(ERROR) << why;
  }
  if (on_failure_) on_failure_(why);
}

void SchedulerLink::on_message(ControlMessage&& msg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_seen_ = std::chrono::steady_clock::now();
    heard_ = true;
  }
  const wire::Header& head = msg.head;
  switch (head.type) {
    case wire::Type::kNodeTable: {
      std::lock_guard<std::mutex> lock(mu_);
      if (orphaned_) {
        // The restarted scheduler took the job over (the table is the one
        // this node reported): barriers sent before go again.
        orphaned_ = false;
        ++epoch_;
        cv_.notify_all();
        break;
      }
      table_ = std::move(msg.table);
      my_id_ = head.recipient;
      generation_ = head.cmd;
      have_table_ = true;
      cv_.notify_all();
      break;
    }
    case wire::Type::kBarrierDone: {
      std::lock_guard<std::mutex> lock(mu_);
      barriers_done_[(head.flags & wire::kFinal) ? -1 : head.cmd]++;
      if (head.flags & wire::kFinal) {
        suspended_ = head.flags & wire::kSuspend;
        // Here, not when barrier() wakes: the scheduler's hanging up next
        // is the end of the job, no loss to report to another.
        left_ = true;
      }
      cv_.notify_all();
      break;
    }
    case wire::Type::kBarrierWaiting: {
      std::lock_guard<std::mutex> lock(mu_);
      barrier_waiting_[(head.flags & wire::kFinal) ? -1 : head.cmd] = std::move(msg.text);
      cv_.notify_all();
      break;
    }
    case wire::Type::kAbort:
      if (head.cmd == kAbortNotNeeded) {
        // Only a registering server hears this, and it leaves cleanly:
        // join() throws LeftOutOfJob, no failure to report.
        std::lock_guard<std::mutex> lock(mu_);
        not_needed_ = true;
        if (failure_.empty()) failure_ = msg.text;
        cv_.notify_all();
      } else if (head.cmd == kAbortRefused) {
        fail("the scheduler at " + scheduler_name() + " refused this node: " + msg.text,
             CARAVAN_ERR_CONFIG);
      } else if (head.cmd == kAbortLeftOut) {
        fail("the scheduler at " + scheduler_name() +
             " left this node out of the job: " + msg.text);
      } else if (head.cmd == kAbortRegroup) {
        wire::Header h;
        h.type = wire::Type::kAbort;
        h.sender = my_id_;
        h.cmd = kAbortRegroup;
        hub_.send(conn_, h, {});
        fail("the job regroups (CARAVAN_ELASTIC): " + msg.text, CARAVAN_ERR_REGROUPED);
      } else
        fail("the scheduler aborted the job: " + msg.text);
      break;
    case wire::Type::kAuthChallenge:
    case wire::Type::kAuthProof:
      on_auth_message(msg);
      break;
    default:  // HEARTBEAT: being heard from is all it says
      break;
  }
}

std::vector<NodeInfo> SchedulerLink::join(NodeInfo& self, bool resuming) {
  // CARAVAN_ELASTIC: a node coming back to the next generation may find the
  // scheduler lost, and waits for the next as a node without one does.
  bool may_wait = config_.elastic && resuming;
  int reach_s = may_wait ? config_.resume_timeout_s : config_.connect_timeout_s;
  long long deadline = net::now_ms() + 1000LL * reach_s;
  std::string err;
  int fd = net::connect_tcp(config_.root_uri, config_.root_port, deadline, &err);
  if (fd < 0)
    throw Error(CARAVAN_ERR_TIMEOUT,
                "cannot reach the scheduler at " + scheduler_name() +
                    " (DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT) within " + std::to_string(reach_s) +
                    " s (" + (may_wait ? "CARAVAN_RESUME_TIMEOUT" : "CARAVAN_CONNECT_TIMEOUT") +
                    "): " + err);
  // Made before the hub's thread starts, which is then the only one to use it.
  if (config_.job_token) auth_ = std::make_unique<AuthInitiator>(config_.job_token);
  conn_ = hub_.adopt(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_seen_ = std::chrono::steady_clock::now();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    joining_ = true;
  }
  hub_.start();
  if (auth_) authenticate(net::now_ms() + 1000LL * config_.connect_timeout_s);
  // Not before: a heartbeat would be a message before the challenge.
  heartbeat_.start();
  if (!send_register(self)) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string why =
        "the scheduler at " + scheduler_name() + " closed the connection during registration";
    if (lost_joining_.empty() && !lose_while_joining(why)) throw Error(CARAVAN_ERR_PEER_LOST, why);
  }
  // The scheduler's start-up deadline (CARAVAN_CONNECT_TIMEOUT from its own
  // start, before this registration) ends the job naming the nodes that
  // are missing. A node that gave up first made the scheduler blame it
  // ("lost server ... during start-up") and named nobody, so a registered
  // node waits that long from now, and a little more.
  // After a suspend, the scheduler waits CARAVAN_RESUME_TIMEOUT from the
  // suspend for the workers to resume, and so does this node.
  constexpr auto kAfterTheScheduler = std::chrono::seconds(5);
  int wait_s = resuming ? config_.resume_timeout_s : config_.connect_timeout_s;
  std::unique_lock<std::mutex> lock(mu_);
  bool ok = false;
  for (;;) {
    ok = cv_.wait_for(lock, std::chrono::seconds(wait_s) + kAfterTheScheduler,
                      [&] { return have_table_ || !failure_.empty() || !lost_joining_.empty(); });
    if (!ok || lost_joining_.empty() || have_table_ || !failure_.empty()) break;
    // CARAVAN_ELASTIC: the scheduler was lost before the table; the one
    // started again at its address gets this registration instead.
    std::string why = std::move(lost_joining_);
    lost_joining_.clear();
    lock.unlock();
    register_again(self, why);
    lock.lock();
  }
  joining_ = false;
  if (not_needed_) throw LeftOutOfJob(failure_);
  if (!failure_.empty()) throw Error(failure_code_, failure_);
  if (!ok && !heard_)
    throw Error(CARAVAN_ERR_TIMEOUT,
                "what listens at " + scheduler_name() +
                    " (DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT) took the connection but sent nothing "
                    "in " +
                    std::to_string(config_.connect_timeout_s) +
                    " s (CARAVAN_CONNECT_TIMEOUT), not even a heartbeat: is it a Caravan "
                    "scheduler?");
  if (!ok && resuming)
    throw Error(CARAVAN_ERR_TIMEOUT,
                "the scheduler at " + scheduler_name() +
                    " did not resume the suspended job within " + std::to_string(wait_s) +
                    " s (CARAVAN_RESUME_TIMEOUT, and 5 s more) of this node's registration, nor "
                    "end it naming the missing nodes");
  if (!ok)
    throw Error(CARAVAN_ERR_TIMEOUT,
                "the scheduler at " + scheduler_name() + " did not complete start-up within " +
                    std::to_string(config_.connect_timeout_s) +
                    " s (CARAVAN_CONNECT_TIMEOUT, and 5 s more) of this node's registration, "
                    "nor end the job "
                    "naming the missing nodes (check DMLC_NUM_WORKER and DMLC_NUM_SERVER on "
                    "every node)");
  for (auto& n : table_)
    if (n.id == my_id_) self = n;
  if (auth_) job_nonce_at_join_.assign(auth_->job_nonce().begin(), auth_->job_nonce().end());
  return table_;
}

bool SchedulerLink::send_register(const NodeInfo& self) {
  wire::Header h;
  h.type = wire::Type::kRegister;
  h.cmd = self.last_generation + 1;
  h.timestamp = self.last_generation_nodes;
  if (!hub_.send(conn_, h, encode_register(self))) return false;
  CARAVAN_VLOG(1) << "registered with the scheduler at " << scheduler_name() << " as "
                  << self.describe();
  return true;
}

bool SchedulerLink::send_barrier(int group, bool final, bool suspend, int passed) {
  wire::Header h;
  h.type = wire::Type::kBarrier;
  h.sender = my_id_;
  h.timestamp = passed;
  h.cmd = group;
  h.flags = final ? static_cast<uint32_t>(wire::kFinal) : 0u;
  if (final && suspend) h.flags |= wire::kSuspend;
  return hub_.send(conn_, h, {});
}

bool SchedulerLink::barrier(int group, bool final, int timeout_s, bool suspend) {
  int key = final ? -1 : group;
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure_.empty()) throw Error(failure_code_, failure_);
  int before = barriers_done_[key];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  // The BARRIER goes out once, and again to a scheduler that took the job
  // over (CARAVAN_ELASTIC) after the one that had it was lost. A send that
  // fails is the connection's loss, which on_lost turns into a failure or
  // an orphaned link.
  int sent_in = -1;  // the epoch it went out in
  struct InShutdownBarrier {
    bool& flag;
    explicit InShutdownBarrier(bool& f, bool final) : flag(f) { flag = final; }
    ~InShutdownBarrier() { flag = false; }  // mu_ is held on every way out
  } in_shutdown(in_shutdown_barrier_, final);
  auto done = [&] {
    return barriers_done_[key] > before || !failure_.empty() || (!orphaned_ && sent_in != epoch_);
  };
  for (;;) {
    if (!failure_.empty()) throw Error(failure_code_, failure_);
    if (barriers_done_[key] > before) break;
    if (!orphaned_ && sent_in != epoch_) {
      sent_in = epoch_;
      lock.unlock();
      bool sent = send_barrier(group, final, suspend, before);
      lock.lock();
      if (!sent && !config_.elastic && failure_.empty())
        throw Error(CARAVAN_ERR_PEER_LOST, "lost the scheduler at " + scheduler_name());
      continue;
    }
    if (timeout_s < 0) {
      cv_.wait(lock, done);
    } else if (!cv_.wait_until(lock, deadline, done)) {
      std::string waiting = orphaned_ ? "a scheduler to take the job over (it was lost)"
                                      : ask_who_is_missing(lock, group, final);
      throw Error(CARAVAN_ERR_TIMEOUT, std::string(final ? "the shutdown barrier" : "a barrier") +
                                           " timed out after " + std::to_string(timeout_s) +
                                           " s: the scheduler at " + scheduler_name() +
                                           " is still waiting for " + waiting);
    }
  }
  return final && suspended_;
}

std::string SchedulerLink::ask_who_is_missing(std::unique_lock<std::mutex>& lock, int group,
                                              bool final) {
  // Only the scheduler knows who has not arrived; a second's wait for its
  // answer is small beside the barrier's own deadline.
  constexpr auto kAnswerDeadline = std::chrono::seconds(2);
  int key = final ? -1 : group;
  barrier_waiting_.erase(key);
  lock.unlock();
  wire::Header h;
  h.type = wire::Type::kBarrierWaiting;
  h.flags = wire::kRequest | (final ? static_cast<uint32_t>(wire::kFinal) : 0u);
  h.sender = my_id_;
  h.cmd = group;
  bool sent = hub_.send(conn_, h, {});
  lock.lock();
  auto answered = [&] { return barrier_waiting_.count(key) > 0 || !failure_.empty(); };
  if (sent && cv_.wait_for(lock, kAnswerDeadline, answered) && barrier_waiting_.count(key))
    return barrier_waiting_[key];
  return "other nodes to arrive (it did not say which within " +
         std::to_string(kAnswerDeadline.count()) + " s)";
}

void SchedulerLink::end_job(const std::string& why) { send_abort_and_wait(0, why); }

void SchedulerLink::leave_job(const std::string& why) { send_abort_and_wait(kAbortLeftOut, why); }

void SchedulerLink::send_abort_and_wait(int32_t kind, const std::string& why) {
  std::unique_lock<std::mutex> lock(mu_);
  if (closing_ || !failure_.empty() || conn_ < 0 || orphaned_) return;
  if (!ended_job_) {
    ended_job_ = true;
    lock.unlock();
    wire::Header h;
    h.type = wire::Type::kAbort;
    h.sender = my_id_;
    h.cmd = kind;
    hub_.send(conn_, h, std::vector<uint8_t>(why.begin(), why.end()));
    lock.lock();
  }
  // The scheduler answers every node with the job's ABORT (or, to a node
  // that left, kAbortLeftOut), this one too; a broken connection ends the
  // wait as well (on_lost).
  bool answered =
      cv_.wait_for(lock, kEndJobDeadline, [&] { return !failure_.empty() || closing_; });
  if (!answered) {
    CARAVAN_LOG(WARNING) << "the scheduler at " << scheduler_name()
                         << " did not answer this node's ABORT within " << kEndJobDeadline.count()
                         << " s; the other nodes may hear only that this node left, not why: "
                         << why;
  }
}

void SchedulerLink::close() {
  std::vector<std::thread> reconnects;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    cv_.notify_all();  // an end_job() waiting for its answer, a reconnect
    reconnects.swap(reconnect_threads_);
  }
  for (auto& t : reconnects) t.join();
  heartbeat_.stop();
  hub_.stop();
}

}  // namespace caravan
