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

}  // namespace caravan
