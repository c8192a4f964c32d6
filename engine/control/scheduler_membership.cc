// The scheduler's membership of the job: registrations, ranks and the
// node table, and the job re-formed after a suspend or a regroup
// (SchedulerService).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/control/job_settings.h"
#include "engine/control/scheduler_service.h"

namespace caravan {

std::string SchedulerService::missing_summary() const {
  int servers = 0, workers = 0;
  for (auto& [c, n] : pending_) (n.role == Role::kServer ? servers : workers)++;
  if (regroup_taken_over_ && awaited_back_ > 0) {
    int came_back = 0;
    for (auto& [c, n] : pending_) came_back += !brings_counts(n);
    std::string s = std::to_string(came_back) + " of the last generation's " +
                    std::to_string(awaited_back_) + " nodes came back (" + std::to_string(workers) +
                    " worker(s), " + std::to_string(servers) + " server(s) in all)";
    for (auto& [key, name] : returning_) s += "; waiting for " + name + " to register again";
    return s;
  }
  if (reforming_) {
    std::string s = counts_known_
                        ? std::to_string(workers) + " of " + std::to_string(config_.num_workers) +
                              " workers (DMLC_NUM_WORKER) resumed"
                        : "no worker has resumed the suspended job yet (the first "
                          "brings the counts)";
    int fresh = 0;
    for (auto& [c, n] : pending_) fresh += n.role == Role::kServer && brings_counts(n);
    s += "; " + std::to_string(servers) +
         (counts_known_ ? " of " + std::to_string(config_.num_servers) : "") +
         " server(s) (DMLC_NUM_SERVER) registered, " + std::to_string(fresh) +
         " of them new to the job";
    for (auto& [key, name] : returning_) s += "; waiting for " + name + " to register again";
    return s;
  }
  std::string s = "registered " + std::to_string(servers) + " of " +
                  std::to_string(config_.num_servers) + " servers (DMLC_NUM_SERVER) and " +
                  std::to_string(workers) + " of " + std::to_string(config_.num_workers) +
                  " workers (DMLC_NUM_WORKER); missing " +
                  std::to_string(config_.num_servers - servers) + " server(s) and " +
                  std::to_string(config_.num_workers - workers) + " worker(s)";
  return s;
}

void SchedulerService::handle_register(int conn, const NodeInfo& n) {
  auto refuse_node = [&](const std::string& why) { refuse(conn, n.describe() + ": " + why, why); };
  if (pending_.count(conn) || nodes_.count(conn))
    return evict(conn, "it registered a second time on one connection");
  if (n.last_generation >= 0 && !take_regroup_over(conn, n)) return;
  if (recovering_) {
    // Taken once the job it joins is recovered (finish_recovery).
    held_registrations_.emplace_back(conn, n);
    return;
  }
  ++registrations_;
  cv_.notify_all();
  if (!failure_.empty()) {
    // A node that starts after the job ended at start-up learns why at
    // once, rather than after its CARAVAN_CONNECT_TIMEOUT.
    CARAVAN_LOG(WARNING) << "scheduler: told " << n.describe() << ", which registered late, that "
                         << "the job ended";
    send_abort(conn, 0, failure_);
    hub_.hang_up(conn);
    return;
  }
  // A server that was in the job before a suspend registers without the
  // counts, which the resumed workers (or nodes new to the job) bring.
  bool has_counts = brings_counts(n);
  // CARAVAN_ELASTIC: a worker or server new to a running job (the nodes of
  // the last generation come back without counts) makes it regroup with
  // one more.
  if (has_counts && (regrouping_ || can_regroup())) return admit(conn, n);
  if (regrouping_) {
    // A node of the last generation: its counts are the scheduler's.
    // A regroup taken over knows the last generation by its size only.
    if (!returning_.erase(server_key(n)) && !(regroup_taken_over_ && n.last_generation >= 0))
      return refuse_node("it was not in the job's last generation, which regroups now");
    pending_[conn] = n;
    CARAVAN_VLOG(1) << "scheduler: registered " << n.describe() << " again; " << missing_summary();
    return send_table_if_complete();
  }
  bool rejoining_server = suspends_ > 0 && n.role == Role::kServer && !has_counts;
  int want = n.role == Role::kServer ? config_.num_servers : config_.num_workers;
  if (table_sent_ && rejoining_server) {
    // The job resumed before this server was back, and without it.
    CARAVAN_VLOG(1) << "scheduler: the job resumed without " << n.describe();
    send_abort(conn, kAbortNotNeeded,
               "the job resumed with " + std::to_string(want) + " server(s) (DMLC_NUM_SERVER)");
    hub_.hang_up(conn);
    return;
  }
  if (table_sent_) return refuse_node("the job has already started with all its nodes");
  if (!counts_known_ && has_counts) take_counts_from(conn, n);
  if (reforming_ && has_counts && counts_from_ != conn) {
    std::string mine = counts_text(n.settings), theirs = counts_text(counts_source_.settings);
    if (mine != theirs)
      return abort_job(n.describe() + " resumes the job with " + mine + " but " +
                       counts_source_.describe() + " with " + theirs +
                       ": call resume() with the same counts on every worker, and start new "
                       "nodes with them");
  }
  if (rejoining_server) returning_.erase(server_key(n));
  want = n.role == Role::kServer ? config_.num_servers : config_.num_workers;
  int have = 0;
  for (auto& [c, p] : pending_) have += p.role == n.role;
  // While the job re-forms, which servers stay is decided once all are in
  // (send_table_if_complete).
  bool counted = !(reforming_ && n.role == Role::kServer);
  if (counted && counts_known_ && have >= want)
    return refuse_node(std::string("the job already has its ") + std::to_string(want) + " " +
                       role_name(n.role) + "s (" +
                       (n.role == Role::kServer ? "DMLC_NUM_SERVER" : "DMLC_NUM_WORKER") +
                       " on the scheduler is " + std::to_string(want) + ")");
  std::vector<const NodeInfo*> others;
  for (auto& [c, p] : pending_) others.push_back(&p);
  std::string conflict = settings_conflict(config_, n, others);
  pending_[conn] = n;
  // The whole job ends: its nodes could only run with wrong sums or wait.
  if (!conflict.empty()) return abort_job(conflict);
  CARAVAN_VLOG(1) << "scheduler: registered " << n.describe() << "; " << missing_summary();
  send_table_if_complete();
}

bool SchedulerService::brings_counts(const NodeInfo& n) {
  return std::any_of(n.settings.begin(), n.settings.end(),
                     [](const auto& kv) { return kv.first == "DMLC_NUM_SERVER"; });
}

std::string SchedulerService::server_key(const NodeInfo& n) {
  return n.host + "/" + std::to_string(n.pid);
}

void SchedulerService::send_table_if_complete() {
  int servers = 0, workers = 0;
  for (auto& [c, p] : pending_) (p.role == Role::kServer ? servers : workers)++;
  if (regrouping_) {
    // The nodes that came back (the others lost or given up on) are the job.
    if (!returning_.empty()) return;
    int came_back = 0;
    for (auto& [c, p] : pending_) came_back += !brings_counts(p);
    if (came_back < awaited_back_) return;
    regroup_taken_over_ = false;
    awaited_back_ = 0;
    if (workers < config_.min_workers || servers == 0)
      return abort_job("the job could not regroup: " + std::to_string(workers) + " worker(s) and " +
                       std::to_string(servers) + " server(s) came back (CARAVAN_MIN_WORKERS=" +
                       std::to_string(config_.min_workers) + ")");
    config_.num_workers = workers;
    config_.num_servers = servers;
    regrouping_ = false;
    unanswered_.clear();
    // The workers that were in the job keep their order, compacted (rank 0
    // is the lowest rank left, whose state the others take); new ones come
    // after.
    std::vector<NodeInfo*> back;
    for (auto& [c, p] : pending_) {
      if (p.role != Role::kWorker) continue;
      if (brings_counts(p))
        p.preferred_rank = -1;
      else
        back.push_back(&p);
    }
    std::stable_sort(back.begin(), back.end(), [](const NodeInfo* a, const NodeInfo* b) {
      return static_cast<unsigned>(a->preferred_rank) < static_cast<unsigned>(b->preferred_rank);
    });
    for (size_t i = 0; i < back.size(); ++i) back[i]->preferred_rank = static_cast<int>(i);
    return send_table();
  }
  if (!counts_known_ || workers != config_.num_workers) return;
  if (!reforming_) {
    if (servers == config_.num_servers) send_table();
    return;
  }
  // Re-forming: every server of the last generation is back (or given up
  // on), so which stay does not depend on who came back first: those of
  // the last generation, lowest ranks first, then new ones.
  if (!returning_.empty() || servers < config_.num_servers) return;
  std::vector<std::tuple<bool, int, int>> ranked;  // (new, preferred rank, conn)
  for (auto& [c, p] : pending_) {
    if (p.role != Role::kServer) continue;
    bool fresh = brings_counts(p);
    ranked.emplace_back(fresh, p.preferred_rank < 0 ? INT_MAX : p.preferred_rank, c);
  }
  std::sort(ranked.begin(), ranked.end());
  std::string counts = std::to_string(config_.num_servers) + " server(s) (DMLC_NUM_SERVER)";
  for (size_t i = static_cast<size_t>(config_.num_servers); i < ranked.size(); ++i) {
    auto [fresh, rank, c] = ranked[i];
    if (fresh) {
      refuse(c, pending_[c].describe() + ": the job already has its " + counts,
             "the job already has its " + counts);
    } else {
      CARAVAN_VLOG(1) << "scheduler: " << pending_[c].describe() << " is not needed";
      send_abort(c, kAbortNotNeeded, "the job resumed with " + counts);
      hub_.hang_up(c);
      last_seen_.erase(c);
    }
    pending_.erase(c);
  }
  send_table();
}

std::string SchedulerService::counts_text(
    const std::vector<std::pair<std::string, std::string>>& s) {
  std::string w = "?", v = "?";
  for (const auto& [key, value] : s) {
    if (key == "DMLC_NUM_WORKER") w = value;
    if (key == "DMLC_NUM_SERVER") v = value;
  }
  return "DMLC_NUM_WORKER=" + w + " and DMLC_NUM_SERVER=" + v;
}

void SchedulerService::take_counts_from(int conn, const NodeInfo& node) {
  counts_from_ = conn;
  counts_source_ = node;
  for (const auto& [k, v] : node.settings) {
    char* end = nullptr;
    long count = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || count < 0 || count > (1 << 20)) continue;  // kept as they were
    if (k == "DMLC_NUM_WORKER") config_.num_workers = static_cast<int>(count);
    if (k == "DMLC_NUM_SERVER") config_.num_servers = static_cast<int>(count);
  }
  counts_known_ = true;
  CARAVAN_VLOG(1) << "scheduler: " << node.describe() << " resumes the job with "
                  << config_.num_workers << " worker(s) (DMLC_NUM_WORKER) and "
                  << config_.num_servers << " server(s) (DMLC_NUM_SERVER)";
}

void SchedulerService::begin_reforming(const std::string& what) {
  ++suspends_;
  reforming_ = true;
  counts_known_ = false;
  counts_from_ = -1;
  suspend_asked_ = false;
  // Every node of the next generation connects anew and hears the new J.
  auth_.renew_job_nonce();
  table_sent_ = false;
  returning_.clear();
  for (auto& [c, n] : nodes_)
    if (n.role == Role::kServer) returning_[server_key(n)] = n.describe();
  returning_deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(config_.connect_timeout_s);
  nodes_.clear();
  barrier_arrived_.clear();
  barriers_passed_.clear();
  gave_up_.clear();
  resume_deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(config_.resume_timeout_s);
  CARAVAN_VLOG(1) << "scheduler: " << what << " (generation " << suspends_
                  << " ended); waiting up to " << config_.resume_timeout_s
                  << " s (CARAVAN_RESUME_TIMEOUT) for the next generation";
}

bool SchedulerService::can_regroup() const {
  if (!config_.elastic || participant_ || !table_sent_ || finished_ || !failure_.empty())
    return false;
  // A worker is leaving already: regrouping would fail its shutdown.
  // (Servers wait at the shutdown barrier all along.)
  if (auto final = barrier_arrived_.find(-1); final != barrier_arrived_.end()) {
    for (auto& [c, n] : nodes_)
      if (n.role == Role::kWorker && final->second.count(n.id)) return false;
  }
  return true;
}

void SchedulerService::start_regroup(const std::string& text) {
  CARAVAN_LOG(WARNING) << "scheduler: " << text << " (CARAVAN_ELASTIC)";
  int workers = 0, servers = 0;
  std::map<std::string, std::string> left;
  unanswered_.clear();
  for (auto& [c, n] : nodes_) {
    (n.role == Role::kServer ? servers : workers)++;
    send_abort(c, kAbortRegroup, text);
    left[server_key(n)] = n.describe();
    unanswered_[c] = server_key(n);
  }
  begin_reforming("the job regroups");
  // Every node left comes back, without counts: they are the scheduler's.
  regrouping_ = true;
  counts_known_ = true;
  config_.num_workers = workers;
  config_.num_servers = servers;
  returning_ = std::move(left);
  cv_.notify_all();
}

void SchedulerService::admit(int conn, const NodeInfo& n) {
  auto refuse_node = [&](const std::string& why) { refuse(conn, n.describe() + ": " + why, why); };
  int workers = 0;
  std::vector<const NodeInfo*> others;
  for (auto* m : {&nodes_, &pending_}) {
    for (auto& [c, p] : *m) {
      workers += p.role == Role::kWorker;
      others.push_back(&p);
    }
  }
  // While the job regroups: those expected back, and the new ones so far.
  if (regrouping_) workers = config_.num_workers;
  if (n.role == Role::kWorker && config_.max_workers > 0 && workers >= config_.max_workers)
    return refuse_node(
        "the job has its CARAVAN_MAX_WORKERS=" + std::to_string(config_.max_workers) + " workers");
  // Its counts are those it was started with; the job's are the scheduler's.
  NodeInfo uncounted = n;
  drop_counts(uncounted.settings);
  if (std::string conflict = settings_conflict(config_, uncounted, others); !conflict.empty())
    return refuse_node(conflict);
  std::string key = server_key(n);
  if (!regrouping_) {
    std::string text = n.describe() + " joins the job";
    start_regroup(text);
    // It registered (and with CARAVAN_JOB_TOKEN authenticated) in the
    // generation that just ended: it comes again, as the others do.
    tell_to_come_again(conn, n, text);
    // A worker comes again with its counts (and is counted then); a server
    // as one of the last generation, without.
    if (n.role == Role::kServer) ++config_.num_servers;
    return;
  }
  returning_.erase(key);
  ++(n.role == Role::kServer ? config_.num_servers : config_.num_workers);
  pending_[conn] = n;
  CARAVAN_VLOG(1) << "scheduler: " << n.describe() << " joins; " << missing_summary();
  send_table_if_complete();
}

bool SchedulerService::regroup_without(int conn, const std::string& why) {
  auto it = nodes_.find(conn);
  if (it == nodes_.end() || !can_regroup()) return false;
  NodeInfo lost = it->second;
  nodes_.erase(it);
  // A stopped process that wakes finds itself out, and reads why.
  send_abort(conn, kAbortLeftOut, "lost " + lost.describe() + ": " + why);
  hub_.hang_up(conn);
  last_seen_.erase(conn);
  regroup_or_end("lost " + lost.describe() + ": " + why);
  return true;
}

void SchedulerService::regroup_or_end(const std::string& lost) {
  int workers = 0, servers = 0;
  for (auto& [c, n] : nodes_) (n.role == Role::kServer ? servers : workers)++;
  if (workers < config_.min_workers)
    return abort_job(
        lost + "; " + std::to_string(workers) +
        " worker(s) left, fewer than CARAVAN_MIN_WORKERS=" + std::to_string(config_.min_workers));
  if (servers == 0) return abort_job(lost + "; no server left");
  start_regroup(lost + "; the job goes on with the " + std::to_string(workers) + " worker(s) and " +
                std::to_string(servers) + " server(s) left");
}

void SchedulerService::send_table_to_nodes(const std::vector<NodeInfo>& all) {
  auto body = encode_node_table(all);
  for (auto& [conn, n] : nodes_) {
    wire::Header h;
    h.type = wire::Type::kNodeTable;
    h.sender = kSchedulerId;
    h.recipient = n.id;
    h.cmd = suspends_;  // the generation, which every data message carries
    hub_.send(conn, h, body);
  }
}

void SchedulerService::send_table() {
  std::vector<NodeInfo> all;
  for (auto& [c, n] : pending_) all.push_back(n);
  try {
    assign_ranks(all, config_.num_servers, config_.num_workers, reforming_);
  } catch (const Error& e) {
    abort_job(e.what());
    return;
  }
  size_t i = 0;
  for (auto& [c, n] : pending_) nodes_[c] = all[i++];
  pending_.clear();
  if (participant_) all.push_back(self_);
  send_table_to_nodes(all);
  table_sent_ = true;
  if (reforming_) {
    CARAVAN_VLOG(1) << "scheduler: the job resumed with " << all.size() << " nodes";
  }
  reforming_ = false;
  CARAVAN_VLOG(1) << "scheduler: all " << all.size() << " nodes registered; node table sent";
  cv_.notify_all();
}

}  // namespace caravan
