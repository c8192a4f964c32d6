#include "engine/control/scheduler_service.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/base/net.h"
#include "engine/control/job_settings.h"

namespace caravan {

SchedulerService::SchedulerService(const JobConfig& config, const NodeInfo* self)
    : config_(config),
      auth_(config.job_token),
      hub_(
          ControlReceiver::kScheduler,
          [this](int c, ControlMessage&& m) { on_message(c, std::move(m)); },
          [this](int c, const std::string& why) { on_closed(c, why); }),
      heartbeat_(config.heartbeat_interval_s, [this] { on_heartbeat_tick(); }) {
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

void SchedulerService::on_heartbeat_tick() {
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
      auto silent = std::chrono::duration_cast<std::chrono::seconds>(now - it->second).count();
      if (silent >= config_.heartbeat_timeout_s) {
        metrics::registry().peers_lost.add();
        abort_job("lost " + n.describe() + ": no heartbeat for " + std::to_string(silent) +
                  " s (PS_HEARTBEAT_TIMEOUT=" + std::to_string(config_.heartbeat_timeout_s) +
                  "); the process hangs, is stopped, or its network is down");
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

std::string SchedulerService::missing_summary() const {
  int servers = 0, workers = 0;
  for (auto& [c, n] : pending_) (n.role == Role::kServer ? servers : workers)++;
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
    case wire::Type::kBarrier:
      handle_barrier(conn, msg.head);
      break;
    case wire::Type::kBarrierWaiting:
      handle_barrier_waiting(conn, msg.head);
      break;
    case wire::Type::kAbort:
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

void SchedulerService::handle_register(int conn, const NodeInfo& n) {
  auto refuse_node = [&](const std::string& why) { refuse(conn, n.describe() + ": " + why, why); };
  if (pending_.count(conn) || nodes_.count(conn))
    return evict(conn, "it registered a second time on one connection");
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

void SchedulerService::begin_reforming() {
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
  gave_up_.clear();
  resume_deadline_ =
      std::chrono::steady_clock::now() + std::chrono::seconds(config_.resume_timeout_s);
  CARAVAN_VLOG(1) << "scheduler: the job is suspended (suspend " << suspends_ << "); waiting up to "
                  << config_.resume_timeout_s
                  << " s (CARAVAN_RESUME_TIMEOUT) for the workers to resume it";
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
  auto body = encode_node_table(all);
  for (auto& [conn, n] : nodes_) {
    wire::Header h;
    h.type = wire::Type::kNodeTable;
    h.sender = kSchedulerId;
    h.recipient = n.id;
    hub_.send(conn, h, body);
  }
  table_sent_ = true;
  if (reforming_) {
    CARAVAN_VLOG(1) << "scheduler: the job resumed with " << all.size() << " nodes";
  }
  reforming_ = false;
  CARAVAN_VLOG(1) << "scheduler: all " << all.size() << " nodes registered; node table sent";
  cv_.notify_all();
}

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

void SchedulerService::handle_node_abort(int conn, const std::string& why) {
  for (auto* m : {&pending_, &nodes_}) {
    auto it = m->find(conn);
    if (it == m->end()) continue;
    metrics::registry().peers_lost.add();
    return abort_job(it->second.describe() + " ended the job: " + why);
  }
  evict(conn, "an ABORT from a connection that is no node of the job");
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
  if (suspend)
    begin_reforming();
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

void SchedulerService::on_closed(int conn, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  last_seen_.erase(conn);
  auth_.forget(conn);
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
  auto it = nodes_.find(conn);
  if (it == nodes_.end()) return;
  NodeInfo n = it->second;
  nodes_.erase(it);
  if (finished_) {
    cv_.notify_all();
    return;
  }
  metrics::registry().peers_lost.add();
  if (auto gave_up = gave_up_.find(conn); gave_up != gave_up_.end())
    return abort_job(n.describe() + " left after its barrier timed out waiting for " +
                     gave_up->second);
  abort_job("lost " + n.describe() + ": its control connection closed (" + why +
            "); the process exited or crashed before shutdown");
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
  if (!cv_.wait_until(lock, deadline, [&] { return table_sent_ || !failure_.empty(); }))
    abort_job("start-up timed out after " + std::to_string(config_.connect_timeout_s) +
              " s (CARAVAN_CONNECT_TIMEOUT): " + missing_summary());
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
    auto until =
        returning_.empty() ? resume_deadline_ : std::min(resume_deadline_, returning_deadline_);
    if (cv_.wait_until(lock, until, [&] { return !reforming_ || !failure_.empty(); })) continue;
    if (std::chrono::steady_clock::now() < resume_deadline_) {
      if (!returning_.empty()) {
        std::string who;
        for (auto& [key, name] : returning_) who += (who.empty() ? "" : ", ") + name;
        CARAVAN_LOG(WARNING) << "scheduler: going on without " << who
                             << ", which did not register again within "
                             << config_.connect_timeout_s
                             << " s of the suspend (CARAVAN_CONNECT_TIMEOUT)";
        returning_.clear();
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
