// The scheduler's life: listening, the messages it takes, nodes lost, the
// job's end. Registration and re-forming are scheduler_membership.cc;
// barriers scheduler_barriers.cc.
#include "engine/control/scheduler_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <optional>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/base/net.h"

namespace caravan {

SchedulerService::SchedulerService(const JobConfig& config, const NodeInfo* self)
    : config_(config),
      auth_(config.job_token),
      hub_(
          ControlReceiver::kScheduler,
          [this](int c, ControlMessage&& m) { on_message(c, std::move(m)); },
          [this](int c, const std::string& why) { on_closed(c, why); }),
      heartbeat_(config.heartbeat_interval_s,
                 [this](bool after_stall) { on_heartbeat_tick(after_stall); }) {
  if (self) {
    participant_ = true;
    self_ = *self;
    self_.id = kSchedulerId;
    self_.role = Role::kScheduler;
    self_.rank = 0;
  }
}

SchedulerService::~SchedulerService() {
  heartbeat_.stop();
  hub_.stop();
}

void SchedulerService::on_heartbeat_tick(bool after_stall) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || !failure_.empty()) return;
  auto now = std::chrono::steady_clock::now();
  wire::Header h;
  h.type = wire::Type::kHeartbeat;
  h.sender = kSchedulerId;
  for (auto* m : {&pending_, &nodes_}) {
    for (auto& [conn, n] : *m) {
      auto it = last_seen_.find(conn);
      if (it == last_seen_.end()) continue;
      // A node that reported the job heartbeats; one that dies closes its
      // connection (on_closed). The table's loss is judged at its end.
      if (recovering_) {
        hub_.send(conn, h, {});
        continue;
      }
      auto silent = std::chrono::duration_cast<std::chrono::seconds>(now - it->second).count();
      if (!after_stall && silent >= config_.heartbeat_timeout_s) {
        metrics::registry().peers_lost.add();
        std::string why =
            "no heartbeat for " + std::to_string(silent) +
            " s (PS_HEARTBEAT_TIMEOUT=" + std::to_string(config_.heartbeat_timeout_s) +
            "); the process hangs, is stopped, or its network is down";
        if (m == &nodes_ && regroup_without(conn, why)) return;
        abort_job("lost " + n.describe() + ": " + why);
        return;
      }
      hub_.send(conn, h, {});
    }
  }
}

int SchedulerService::node_of(int conn) const {
  auto it = nodes_.find(conn);
  return it == nodes_.end() ? 0 : it->second.id;
}

void SchedulerService::abort_job(const std::string& why) {
  if (!failure_.empty()) return;
  failure_ = why;
  CARAVAN_LOG(ERROR) << "aborting the job: " << why;
  for (auto* m : {&pending_, &nodes_})
    for (auto& [conn, n] : *m) send_abort(conn, 0, why);
  cv_.notify_all();
  if (on_failure_) on_failure_(why);
}

void SchedulerService::on_message(int conn, ControlMessage&& msg) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!auth_.admitted(conn)) {
    AuthResponder::Step step = auth_.on_message(conn, msg);
    if (step.reply) hub_.send(conn, step.reply->head, control_body(*step.reply));
    if (step.outcome == AuthResponder::Step::kRefuse) return refuse(conn, step.why, step.tell);
    if (step.outcome == AuthResponder::Step::kWait) return;
    hub_.admit(conn);
    if (!step.deliver) {
      CARAVAN_VLOG(1) << "scheduler: " << hub_.peer(conn) << " proved it has CARAVAN_JOB_TOKEN";
      return;
    }
  }
  last_seen_[conn] = std::chrono::steady_clock::now();
  switch (msg.head.type) {
    case wire::Type::kRegister:
      handle_register(conn, msg.node);
      break;
    case wire::Type::kReport:
      handle_report(conn, msg);
      break;
    case wire::Type::kBarrier:
      handle_barrier(conn, msg.head);
      break;
    case wire::Type::kBarrierWaiting:
      handle_barrier_waiting(conn, msg.head);
      break;
    case wire::Type::kAbort:
      if (msg.head.cmd == kAbortRegroup) {
        // A node of the ended generation took the regroup: its connection
        // closing from now on is no loss.
        unanswered_.erase(conn);
        break;
      }
      // CARAVAN_ELASTIC: the node leaves and the job goes on without it,
      // when it can regroup now; otherwise it ends, as with kind 0.
      if (msg.head.cmd == kAbortLeftOut && regroup_without(conn, "it left the job: " + msg.text))
        break;
      handle_node_abort(conn, msg.text);
      break;
    case wire::Type::kAuthHello:
    case wire::Type::kAuthProof:
      evict(conn,
            std::string("it sent ") + control_type_name(msg.head.type) + " after it was admitted");
      break;
    default:  // HEARTBEAT: being heard from is all it says
      break;
  }
}

void SchedulerService::send_abort(int conn, int32_t kind, const std::string& text) {
  wire::Header h;
  h.type = wire::Type::kAbort;
  h.sender = kSchedulerId;
  h.cmd = kind;
  hub_.send(conn, h, std::vector<uint8_t>(text.begin(), text.end()));
}

void SchedulerService::refuse(int conn, const std::string& why, const std::string& tell) {
  CARAVAN_LOG(WARNING) << "scheduler: refused " << hub_.peer(conn) << ": " << why;
  send_abort(conn, kAbortRefused, tell);
  hub_.hang_up(conn);
  last_seen_.erase(conn);
  auth_.forget(conn);
}

void SchedulerService::evict(int conn, const std::string& why) {
  CARAVAN_LOG(WARNING) << "scheduler: dropping the connection from " << hub_.peer(conn) << ": "
                       << why;
  hub_.close(conn);
  last_seen_.erase(conn);
  auth_.forget(conn);
  for (auto* m : {&pending_, &nodes_}) {
    auto it = m->find(conn);
    if (it == m->end()) continue;
    NodeInfo n = it->second;
    m->erase(it);
    metrics::registry().peers_lost.add();
    abort_job("lost " + n.describe() + ": " + why);
  }
}

void SchedulerService::handle_node_abort(int conn, const std::string& why) {
  for (auto* m : {&pending_, &nodes_}) {
    auto it = m->find(conn);
    if (it == m->end()) continue;
    metrics::registry().peers_lost.add();
    return abort_job(it->second.describe() + " ended the job: " + why);
  }
  evict(conn, "an ABORT from a connection that is no node of the job");
}

void SchedulerService::on_closed(int conn, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  last_seen_.erase(conn);
  auth_.forget(conn);
  held_registrations_.erase(std::remove_if(held_registrations_.begin(), held_registrations_.end(),
                                           [&](const auto& held) { return held.first == conn; }),
                            held_registrations_.end());
  if (auto it = nodes_.find(conn); recovering_ && it != nodes_.end()) {
    // It reported and left: missing at the end, as if it never had.
    CARAVAN_LOG(WARNING) << "scheduler: " << it->second.describe()
                         << " left while the job is taken over (" << why << ")";
    nodes_.erase(it);
    return;
  }
  if (auto it = pending_.find(conn); it != pending_.end()) {
    NodeInfo n = it->second;
    pending_.erase(it);
    metrics::registry().peers_lost.add();
    if (reforming_) {
      // After a suspend a node may give up (its own deadline, Ctrl-C):
      // the job re-forms without it, as if it had never come back.
      CARAVAN_LOG(WARNING) << "scheduler: " << n.describe()
                           << " left while the suspended job re-forms (" << why
                           << "); going on without it";
      if (counts_from_ == conn) {
        counts_known_ = false;
        counts_from_ = -1;
        for (auto& [c, p] : pending_) {
          if (brings_counts(p)) {
            take_counts_from(c, p);
            break;
          }
        }
      }
      send_table_if_complete();
      return;
    }
    // A node that dies before the table exists would otherwise leave the
    // others waiting for the start-up deadline.
    abort_job("lost " + n.describe() + " during start-up: " + why);
    return;
  }
  if (auto gone = unanswered_.find(conn); gone != unanswered_.end()) {
    // It closed before taking the regroup: lost as well.
    if (auto r = returning_.find(gone->second); r != returning_.end()) {
      CARAVAN_LOG(WARNING) << "scheduler: lost " << r->second << " while the job regroups (" << why
                           << "); going on without it";
      returning_.erase(r);
    }
    unanswered_.erase(gone);
    send_table_if_complete();
    return;
  }
  auto it = nodes_.find(conn);
  if (it == nodes_.end()) return;
  NodeInfo n = it->second;
  if (finished_) {
    nodes_.erase(it);
    cv_.notify_all();
    return;
  }
  metrics::registry().peers_lost.add();
  std::string lost =
      "its control connection closed (" + why + "); the process exited or crashed before shutdown";
  if (!gave_up_.count(conn) && regroup_without(conn, lost)) return;
  nodes_.erase(it);
  if (auto gave_up = gave_up_.find(conn); gave_up != gave_up_.end())
    return abort_job(n.describe() + " left after its barrier timed out waiting for " +
                     gave_up->second);
  abort_job("lost " + n.describe() + ": " + lost);
}

namespace {

// caravan-launch binds the scheduler's port and hands the listening socket
// down as CARAVAN_SCHEDULER_FD: a port chosen, released and bound again by
// the scheduler could be taken in between by any process's connect()
// (PsLiteJob.RunsUnchangedInEveryRole/DefaultHandle_4w3s failed so in CI:
// "cannot listen on 0.0.0.0:40127: Address already in use"). Taken once
// per process: a later scheduler in it binds the port itself.
std::optional<int> inherited_listener(int port) {
  static std::atomic<bool> taken{false};
  std::optional<int64_t> fd;
  if (env::get("CARAVAN_SCHEDULER_FD")) fd = env::integer("CARAVAN_SCHEDULER_FD", 3, INT_MAX, {});
  if (!fd || taken.exchange(true)) return std::nullopt;
  return net::adopt_listener("CARAVAN_SCHEDULER_FD", static_cast<int>(*fd), port);
}

}  // namespace

void SchedulerService::start() {
  Log::set_node_label("scheduler");
  started_ = std::chrono::steady_clock::now();
  if (std::optional<int> fd = inherited_listener(config_.root_port)) {
    hub_.listen_on(*fd);
  } else {
    // Bind every interface, as ps-lite does: DMLC_PS_ROOT_URI is how others
    // reach us, which may be a NAT or DNS name rather than a local address.
    hub_.listen("0.0.0.0", config_.root_port);
  }
  // Every node sends its registration as soon as it connects, and a node
  // that stays silent this long counts as lost anyway: a connection that
  // stalls for longer (in its first message or mid-message) is no node.
  hub_.set_stall_limit(config_.heartbeat_timeout_s);
  hub_.start();
  heartbeat_.start();
  CARAVAN_VLOG(1) << "scheduler: listening on port " << config_.root_port << " for "
                  << config_.num_servers << " servers and " << config_.num_workers << " workers";
}

std::vector<NodeInfo> SchedulerService::wait_table() {
  std::unique_lock<std::mutex> lock(mu_);
  auto deadline = started_ + std::chrono::seconds(config_.connect_timeout_s);
  // A scheduler started again takes a running job over instead, from its
  // nodes' reports (finish_recovery: the table, or a regroup).
  while (!cv_.wait_until(lock, deadline,
                         [&] { return table_sent_ || reforming_ || !failure_.empty(); })) {
    if (!recovering_) {
      abort_job("start-up timed out after " + std::to_string(config_.connect_timeout_s) +
                " s (CARAVAN_CONNECT_TIMEOUT): " + missing_summary());
      break;
    }
    if (std::chrono::steady_clock::now() < recovery_deadline_)
      deadline = recovery_deadline_;
    else
      finish_recovery();
  }
  if (!failure_.empty()) {
    // The job ended at start-up (a mismatch, a node lost): nodes still on
    // their way would wait out their own start-up deadline to hear nothing,
    // so stay until each has registered and been told, within the
    // start-up window that they would have had.
    int expected = config_.num_servers + config_.num_workers;
    if (registrations_ < expected && std::chrono::steady_clock::now() < deadline) {
      CARAVAN_LOG(WARNING) << "scheduler: staying up to " << config_.connect_timeout_s
                           << " s after start (CARAVAN_CONNECT_TIMEOUT) to tell the "
                           << expected - registrations_
                           << " node(s) yet to register why the job ended";
    }
    cv_.wait_until(lock, deadline, [&] { return registrations_ >= expected; });
    throw Error(CARAVAN_ERR_TIMEOUT, failure_);
  }
  std::vector<NodeInfo> all;
  for (auto& [c, n] : nodes_) all.push_back(n);
  if (participant_) all.push_back(self_);
  return all;
}

int SchedulerService::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return finished_ || reforming_ || !failure_.empty(); });
    if (finished_ || !failure_.empty()) break;
    bool awaiting = !returning_.empty() || awaited_back_ > 0;
    auto until = awaiting ? std::min(resume_deadline_, returning_deadline_) : resume_deadline_;
    if (cv_.wait_until(lock, until, [&] { return !reforming_ || !failure_.empty(); })) continue;
    if (std::chrono::steady_clock::now() < resume_deadline_) {
      if (awaiting) {
        std::string who;
        for (auto& [key, name] : returning_) who += (who.empty() ? "" : ", ") + name;
        if (awaited_back_ > 0) {
          int back = 0;
          for (auto& [c, p] : pending_) back += !brings_counts(p);
          who += std::string(who.empty() ? "" : ", and ") + "the " +
                 std::to_string(std::max(awaited_back_ - back, 0)) + " of the last generation's " +
                 std::to_string(awaited_back_) + " nodes that did not come back";
        }
        CARAVAN_LOG(WARNING) << "scheduler: going on without " << who
                             << ", which did not register again within "
                             << config_.connect_timeout_s
                             << " s of the generation's end (CARAVAN_CONNECT_TIMEOUT)";
        returning_.clear();
        awaited_back_ = 0;
        send_table_if_complete();
      }
      continue;
    }
    abort_job("the suspended job was not resumed within " +
              std::to_string(config_.resume_timeout_s) +
              " s (CARAVAN_RESUME_TIMEOUT): " + missing_summary());
  }
  if (!failure_.empty()) {
    lock.unlock();
    heartbeat_.stop();
    hub_.stop();
    return 1;
  }
  // Give nodes a moment to hang up after the shutdown barrier, so none of
  // them sees the scheduler vanish first and reports a failure.
  cv_.wait_for(lock, std::chrono::seconds(10), [&] { return nodes_.empty(); });
  lock.unlock();
  heartbeat_.stop();
  hub_.stop();
  CARAVAN_VLOG(1) << "scheduler: job finished";
  return 0;
}

std::string SchedulerService::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

int SchedulerService::run() {
  start();
  try {
    wait_table();
  } catch (const Error&) {
    hub_.stop();
    return 1;
  }
  return finish();
}

}  // namespace caravan
