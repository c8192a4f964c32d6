// The scheduler's barriers: every member of a group, the shutdown barrier
// (which may suspend the job), and who a barrier still waits for.
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/control/scheduler_service.h"

namespace caravan {

void SchedulerService::handle_barrier(int conn, const wire::Header& head) {
  int id = node_of(conn);
  if (id == 0) return evict(conn, "a barrier from a connection that is no node of the job (yet)");
  bool final = head.flags & wire::kFinal;
  int key = final ? -1 : head.cmd;
  if (final && (head.flags & wire::kSuspend)) {
    if (participant_)
      return abort_job(nodes_[conn].describe() +
                       " asked to suspend the job, which a job whose scheduler takes part (the "
                       "ps-lite form) cannot do");
    suspend_asked_ = true;
  }
  // A barrier this node had not heard completed when the scheduler that
  // had the job was lost, while another node heard it (that node's REPORT
  // says so): it is over. (Not the shutdown barrier: the nodes that passed
  // it have left and report nothing.)
  if (!final && head.timestamp < barriers_passed_[key]) {
    CARAVAN_VLOG(1) << "scheduler: " << nodes_[conn].describe() << " waits for barrier " << head.cmd
                    << " number " << head.timestamp + 1 << ", which other nodes passed: it is over";
    wire::Header h;
    h.type = wire::Type::kBarrierDone;
    h.sender = kSchedulerId;
    h.cmd = head.cmd;
    hub_.send(conn, h, {});
    return;
  }
  barrier_arrived_[key].insert(id);
  complete_barrier_if_ready(key, head.cmd, final);
}

std::vector<const NodeInfo*> SchedulerService::barrier_members(int group, bool final) const {
  std::vector<const NodeInfo*> members;
  if (participant_ && (final || (group & kSchedulerGroup))) members.push_back(&self_);
  for (auto& [c, n] : nodes_) {
    int g = n.role == Role::kServer ? kServerGroup : kWorkerGroup;
    if (final || (group & g)) members.push_back(&n);
  }
  return members;
}

std::string SchedulerService::barrier_waiting_for(int group, bool final) const {
  int key = final ? -1 : group;
  auto it = barrier_arrived_.find(key);
  std::string names;
  size_t missing = 0;
  for (const NodeInfo* n : barrier_members(group, final)) {
    if (it != barrier_arrived_.end() && it->second.count(n->id)) continue;
    if (missing++ < 8) names += (names.empty() ? "" : ", ") + n->describe();
  }
  if (missing == 0) return "";
  if (missing > 8) names += " and " + std::to_string(missing - 8) + " more";
  return std::to_string(missing) + " node(s) that have not arrived: " + names;
}

void SchedulerService::handle_barrier_waiting(int conn, const wire::Header& head) {
  bool final = head.flags & wire::kFinal;
  std::string text = barrier_waiting_for(head.cmd, final);
  if (text.empty())
    text = "no node any more (every member has arrived; the completion is on its way)";
  else
    gave_up_[conn] = text;  // it leaves next: its loss is not a crash
  wire::Header h;
  h.type = wire::Type::kBarrierWaiting;
  h.sender = kSchedulerId;
  h.cmd = head.cmd;
  h.flags = head.flags & wire::kFinal;
  hub_.send(conn, h, std::vector<uint8_t>(text.begin(), text.end()));
}

void SchedulerService::complete_barrier_if_ready(int key, int group, bool final) {
  auto& arrived = barrier_arrived_[key];
  size_t expected = barrier_members(group, final).size();
  CARAVAN_VLOG(1) << "scheduler: barrier " << (final ? "shutdown" : std::to_string(group)) << ": "
                  << arrived.size() << " of " << expected << " arrived";
  if (arrived.size() < expected) return;
  wire::Header h;
  h.type = wire::Type::kBarrierDone;
  h.sender = kSchedulerId;
  h.cmd = group;
  h.flags = final ? static_cast<uint32_t>(wire::kFinal) : 0u;
  bool suspend = final && suspend_asked_;
  if (suspend) h.flags |= wire::kSuspend;
  for (auto& [c, n] : nodes_)
    if (arrived.count(n.id)) hub_.send(c, h, {});
  if (arrived.count(kSchedulerId)) local_done_[key]++;
  barrier_arrived_.erase(key);
  barriers_passed_[key]++;
  if (suspend)
    begin_reforming("the job is suspended");
  else if (final)
    finished_ = true;
  cv_.notify_all();
}

void SchedulerService::barrier(int group, bool final, int timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure_.empty()) throw Error(CARAVAN_ERR_PEER_LOST, failure_);
  int key = final ? -1 : group;
  int before = local_done_[key];
  barrier_arrived_[key].insert(kSchedulerId);
  complete_barrier_if_ready(key, group, final);
  auto done = [&] { return local_done_[key] > before || !failure_.empty(); };
  if (timeout_s < 0) {
    cv_.wait(lock, done);
  } else if (!cv_.wait_for(lock, std::chrono::seconds(timeout_s), done)) {
    throw Error(CARAVAN_ERR_TIMEOUT,
                std::string(final ? "the shutdown barrier"
                                  : "a barrier of group " + std::to_string(group)) +
                    " timed out after " + std::to_string(timeout_s) +
                    " s on the scheduler, waiting for " + barrier_waiting_for(group, final));
  }
  if (!failure_.empty()) throw Error(CARAVAN_ERR_PEER_LOST, failure_);
}

}  // namespace caravan
