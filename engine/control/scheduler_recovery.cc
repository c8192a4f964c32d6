// CARAVAN_ELASTIC: a scheduler started again at the address of one that
// was lost takes the running job over. Its nodes trained on without a
// scheduler (SchedulerLink, scheduler_link_recovery.cc) and each reports
// the node table it is in; once all have, this scheduler has the job as
// if it had formed it, and answers each with the table. A node that does
// not report within CARAVAN_CONNECT_TIMEOUT of the first is lost: the job
// regroups without it.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/log.h"
#include "engine/control/scheduler_service.h"

namespace caravan {

void SchedulerService::handle_report(int conn, const ControlMessage& msg) {
  const int id = msg.head.sender;
  auto refuse_node = [&](const std::string& why) {
    refuse(conn, "node " + std::to_string(id) + ", reporting a running job: " + why, why);
  };
  if (!config_.elastic || participant_)
    return refuse_node(
        "this scheduler does not take a running job over (CARAVAN_ELASTIC is not 1 for it)");
  if (regroup_taken_over_ && regrouping_ && msg.head.cmd < suspends_) {
    // Still in the generation that was regrouping when its scheduler was
    // lost, which it had not heard: it regroups, as the others do.
    CARAVAN_VLOG(1) << "scheduler: node " << id << " reports generation " << msg.head.cmd
                    << ", which regroups: telling it so";
    send_abort(conn, kAbortRegroup, "the job regroups (its scheduler was lost while it did)");
    return;
  }
  if (!recovering_ && (table_sent_ || reforming_ || !pending_.empty() || !failure_.empty()))
    return refuse_node("this scheduler runs a job of its own, not the one this node reports");
  if (!recovering_) {
    recovering_ = true;
    reported_table_ = msg.table;
    suspends_ = msg.head.cmd;  // the job's generation, which its data messages carry
    recovery_deadline_ =
        std::chrono::steady_clock::now() + std::chrono::seconds(config_.connect_timeout_s);
    if (msg.auth.size() == auth::kNonceBytes) {
      auth::Nonce job;
      std::copy(msg.auth.begin(), msg.auth.end(), job.begin());
      auth_.adopt_job_nonce(job);
    }
    CARAVAN_LOG(WARNING) << "scheduler: node " << id << " reports a running job of "
                         << reported_table_.size()
                         << " nodes whose scheduler was lost: taking it over (CARAVAN_ELASTIC); "
                         << "waiting up to " << config_.connect_timeout_s
                         << " s (CARAVAN_CONNECT_TIMEOUT) for the others' reports";
  } else if (msg.head.cmd != suspends_ ||
             encode_node_table(msg.table) != encode_node_table(reported_table_) ||
             (msg.auth.size() == auth::kNonceBytes &&
              !std::equal(msg.auth.begin(), msg.auth.end(), auth_.job_nonce().begin()))) {
    return refuse_node("its report of the job differs from the first one this scheduler took");
  }
  auto me = std::find_if(reported_table_.begin(), reported_table_.end(),
                         [&](const NodeInfo& n) { return n.id == id; });
  for (auto& [c, n] : nodes_)
    if (n.id == id) return refuse_node(n.describe() + " has reported already");
  nodes_[conn] = *me;
  if (msg.head.flags & wire::kFinal) reported_in_shutdown_.insert(id);
  for (auto [key, passed] : msg.barriers)
    barriers_passed_[key] = std::max(barriers_passed_[key], passed);
  CARAVAN_VLOG(1) << "scheduler: " << me->describe() << " reported the job; " << nodes_.size()
                  << " of " << reported_table_.size() << " nodes have";
  if (nodes_.size() == reported_table_.size()) finish_recovery();
}

void SchedulerService::finish_recovery() {
  recovering_ = false;
  table_sent_ = true;
  int workers = 0, servers = 0;
  for (const NodeInfo& n : reported_table_) (n.role == Role::kServer ? servers : workers)++;
  config_.num_workers = workers;
  config_.num_servers = servers;
  std::string missing;
  for (const NodeInfo& n : reported_table_) {
    bool reported = std::any_of(nodes_.begin(), nodes_.end(),
                                [&](const auto& entry) { return entry.second.id == n.id; });
    if (!reported) missing += (missing.empty() ? "" : ", ") + n.describe();
  }
  if (missing.empty()) {
    send_table_to_nodes(reported_table_);
    CARAVAN_LOG(WARNING) << "scheduler: took the job over from the reports of all its "
                         << nodes_.size() << " nodes; it goes on";
  } else if (reported_in_shutdown_.size() == nodes_.size()) {
    // The scheduler was lost as the shutdown barrier completed: the nodes
    // that heard it left, and those that did not wait in it still. The job
    // is over; they pass it among themselves (barrier_members: the nodes
    // that reported), rather than regroup without the others.
    send_table_to_nodes(reported_table_);
    CARAVAN_LOG(WARNING) << "scheduler: " << missing << " did not report within "
                         << config_.connect_timeout_s
                         << " s (CARAVAN_CONNECT_TIMEOUT), and every node that did waits in the "
                         << "shutdown barrier: they passed it and left; the job ends";
  } else {
    regroup_or_end("lost " + missing + ": no report to the scheduler started again within " +
                   std::to_string(config_.connect_timeout_s) + " s (CARAVAN_CONNECT_TIMEOUT)");
  }
  reported_in_shutdown_.clear();
  cv_.notify_all();
  // Nodes new to the job that registered meanwhile join it now.
  auto held = std::move(held_registrations_);
  held_registrations_.clear();
  for (auto& [conn, n] : held) handle_register(conn, n);
}

bool SchedulerService::take_regroup_over(int conn, const NodeInfo& n) {
  if (!config_.elastic || participant_ || regrouping_ || !failure_.empty()) return true;
  std::string from = "generation " + std::to_string(n.last_generation) + " (" +
                     std::to_string(n.last_generation_nodes) + " nodes)";
  if (recovering_) {
    if (n.last_generation != suspends_) return true;  // held until the job is recovered
    // The nodes that report it had not heard that it regroups.
    std::string text = n.describe() + " registers again after " + from +
                       ": the job was regrouping when its scheduler was lost; it regroups now";
    recovering_ = false;
    table_sent_ = true;
    reported_in_shutdown_.clear();
    awaited_back_ = static_cast<int>(reported_table_.size());
    ++suspends_;  // past a generation the lost scheduler may have formed
    start_regroup(text);
    regroup_taken_over_ = true;
    auto held = std::move(held_registrations_);
    held_registrations_.clear();
    tell_to_come_again(conn, n, text);
    for (auto& [c, p] : held) tell_to_come_again(c, p, text);
    return false;
  }
  if (table_sent_ || reforming_ || suspends_ > 0) return true;  // a job of its own
  std::string text = n.describe() + " registers again after " + from +
                     ", whose scheduler was lost while the job regrouped: this scheduler takes "
                     "the regroup over";
  CARAVAN_LOG(WARNING) << "scheduler: " << text << " (CARAVAN_ELASTIC); waiting up to "
                       << config_.connect_timeout_s
                       << " s (CARAVAN_CONNECT_TIMEOUT) for the others";
  auto registered = std::move(pending_);
  pending_.clear();
  suspends_ = n.last_generation + 1;  // begin_reforming: past the one that regrouped
  begin_reforming("took a regroup over");
  regrouping_ = true;
  counts_known_ = true;
  config_.num_workers = 0;
  config_.num_servers = 0;
  regroup_taken_over_ = true;
  awaited_back_ = n.last_generation_nodes;
  // Every node so far proved itself with the job nonce that
  // begin_reforming replaced.
  tell_to_come_again(conn, n, text);
  for (auto& [c, p] : registered) tell_to_come_again(c, p, text);
  cv_.notify_all();
  return false;
}

void SchedulerService::tell_to_come_again(int conn, const NodeInfo& n, const std::string& text) {
  send_abort(conn, kAbortRegroup, text);
  returning_[server_key(n)] = n.describe();
  unanswered_[conn] = server_key(n);
}

}  // namespace caravan
