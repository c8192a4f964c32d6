// The scheduler role: registers nodes, assigns ranks, hands out the node
// table, runs barriers, and ends the job, cleanly or with the name of the
// node that was lost. Defined in four files: scheduler_service.cc (its
// life and messages), scheduler_membership.cc (registration, ranks,
// re-forming), scheduler_barriers.cc and scheduler_recovery.cc (taking a
// running job over after the scheduler that had it was lost).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/base/config.h"
#include "engine/base/job_token.h"
#include "engine/control/control_auth.h"
#include "engine/control/control_hub.h"
#include "engine/control/control_message.h"
#include "engine/control/heartbeat.h"
#include "engine/control/node_info.h"

namespace caravan {

class SchedulerService {
 public:
  // `self`, when given, makes the scheduler a participant (the ps-lite
  // form): it appears in the node table with its van address, and barriers
  // of kSchedulerGroup and the shutdown barrier wait for it too.
  explicit SchedulerService(const JobConfig& config, const NodeInfo* self = nullptr);
  ~SchedulerService();
  // Serves the job until it ends; returns the process exit code.
  int run();

  // The participant form, piece by piece: start() listens and returns;
  // wait_table() blocks until every node registered (or throws, naming the
  // missing ones; after a start-up failure it first stays, within
  // CARAVAN_CONNECT_TIMEOUT of start(), until every node has registered
  // and been told why); barrier() joins a barrier as node 1; finish() waits for
  // the end of the job and returns the exit code.
  void start();
  std::vector<NodeInfo> wait_table();
  void barrier(int group, bool final, int timeout_s);
  int finish();
  std::string failure() const;
  // The job nonce the data plane's keys come from (CARAVAN_JOB_TOKEN).
  const auth::Nonce& job_nonce() const { return auth_.job_nonce(); }
  // Told once when the job fails (called with the service's lock held:
  // it must not call back into the service).
  void set_failure_handler(std::function<void(const std::string&)> handler) {
    on_failure_ = std::move(handler);
  }

 private:
  void on_message(int conn, ControlMessage&& msg);
  void on_closed(int conn, const std::string& why);
  void handle_register(int conn, const NodeInfo& n);
  // Tells the peer why (an ABORT it alone gets), logs it with the peer's
  // address and hangs up; the job goes on. Caller holds mu_.
  void refuse(int conn, const std::string& why, const std::string& tell);
  // Closes a connection that broke the protocol; when it belongs to a node
  // of the job, the job ends naming that node. Caller holds mu_.
  void evict(int conn, const std::string& why);
  void handle_barrier(int conn, const wire::Header& head);
  void send_table();
  // Sends `all` as the node table to every node of nodes_. Caller holds mu_.
  void send_table_to_nodes(const std::vector<NodeInfo>& all);
  // Sends BARRIER_DONE when every member of the barrier `key` arrived.
  // Caller holds mu_.
  void complete_barrier_if_ready(int key, int group, bool final);
  // The nodes a barrier waits for (this scheduler first when it takes part).
  std::vector<const NodeInfo*> barrier_members(int group, bool final) const;
  // "2 node(s) that have not arrived: worker 1 (pid ...), ...", or "" when
  // none is missing. Caller holds mu_.
  std::string barrier_waiting_for(int group, bool final) const;
  // Answers a node's BARRIER_WAITING question. Caller holds mu_.
  void handle_barrier_waiting(int conn, const wire::Header& head);
  // A node ends the job, saying why (ABORT from a node). Caller holds mu_.
  void handle_node_abort(int conn, const std::string& why);
  // Ends the job: every node gets ABORT with `why`. Caller holds mu_.
  void abort_job(const std::string& why);
  // ABORT of `kind` (0: the job ended, kAbortRefused) with `text` to `conn`.
  void send_abort(int conn, int32_t kind, const std::string& text);
  std::string missing_summary() const;
  // The shutdown barrier completed as a suspend, or the job regroups
  // (`what` says which, for the log): forget this generation's nodes
  // (their connections close next, which is no loss) and wait up to
  // CARAVAN_RESUME_TIMEOUT for the next one. Caller holds mu_.
  void begin_reforming(const std::string& what);
  // CARAVAN_ELASTIC: the node of `conn` (in nodes_) is lost for `why`:
  // every other node hears kAbortRegroup, and the job re-forms with the
  // nodes left, once each has registered again (or CARAVAN_CONNECT_TIMEOUT
  // passed). Returns false, changing nothing, when the job does not
  // regroup (not elastic, the ps-lite form, the shutdown barrier under
  // way); ends the job when too few workers or no server would be left.
  // Caller holds mu_.
  bool regroup_without(int conn, const std::string& why);
  // Whether a loss or a new worker regroups the job now (CARAVAN_ELASTIC,
  // not the ps-lite form, no worker at the shutdown barrier).
  bool can_regroup() const;
  // Ends this generation: every node hears kAbortRegroup with `text` and
  // is awaited back (returning_). Caller holds mu_.
  void start_regroup(const std::string& text);
  // After `lost` (what was lost, and why): the job regroups with the nodes
  // of nodes_, or ends when fewer than CARAVAN_MIN_WORKERS workers or no
  // server are left. Caller holds mu_.
  void regroup_or_end(const std::string& lost);
  // CARAVAN_ELASTIC: worker or server `n`, new to the running job, joins
  // it at the regroup under way, or starts one (and then, like every node
  // of the ended generation, is told to register again); unless its
  // settings or, for a worker, CARAVAN_MAX_WORKERS refuse it. Caller
  // holds mu_.
  void admit(int conn, const NodeInfo& n);
  // After a suspend, the first node to register with counts (a resumed
  // worker, or a node new to the job) brings them. Caller holds mu_.
  void take_counts_from(int conn, const NodeInfo& node);
  // "DMLC_NUM_WORKER=2 and DMLC_NUM_SERVER=1" from a node's settings.
  static std::string counts_text(const std::vector<std::pair<std::string, std::string>>& settings);
  // A registration complete: the table goes out. After a suspend, once
  // every server of the last generation is back (or CARAVAN_CONNECT_TIMEOUT
  // passed): servers beyond the new count leave, the last generation's
  // lowest ranks staying first, then new servers. Caller holds mu_.
  void send_table_if_complete();
  // Whether `n` registered with the job's counts: every node does, except
  // a server registering again after a suspend (they are the workers' to
  // say then).
  static bool brings_counts(const NodeInfo& n);
  // A node across a suspend or a regroup: its host and pid.
  static std::string server_key(const NodeInfo& n);
  int node_of(int conn) const;
  // CARAVAN_ELASTIC (scheduler_recovery.cc): a node reports the job it is
  // in to this scheduler, started again after the one that had the job
  // was lost; once every node of the report has (or CARAVAN_CONNECT_TIMEOUT
  // after the first report), this scheduler has the job. Caller holds mu_.
  void handle_report(int conn, const ControlMessage& msg);
  // The reports are in, or the time for them is up: the job goes on with
  // the nodes that reported, regrouping without the others. Caller holds
  // mu_.
  void finish_recovery();
  // CARAVAN_ELASTIC (scheduler_recovery.cc): a node registers again after
  // a regroup (NodeInfo::last_generation) with this scheduler, started
  // again after the one that ran the regroup was lost. A scheduler with no
  // job yet takes the regroup over; one taking over a job whose reports
  // name that generation learns that the job was regrouping, and regroups
  // it. Either way the last generation's nodes are awaited
  // (awaited_back_) until CARAVAN_CONNECT_TIMEOUT. Returns whether `n`'s
  // registration goes on as one of the regroup; false: it was held or
  // refused. Caller holds mu_.
  bool take_regroup_over(int conn, const NodeInfo& n);
  // A node registered before the job nonce changed (CARAVAN_JOB_TOKEN):
  // it hears kAbortRegroup and registers again, awaited in returning_.
  // Caller holds mu_.
  void tell_to_come_again(int conn, const NodeInfo& n, const std::string& text);

  JobConfig config_;
  AuthResponder auth_;  // guarded by mu_
  ControlHub hub_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, NodeInfo> pending_;               // conn -> registration, before the table
  std::map<int, NodeInfo> nodes_;                 // conn -> node, after the table
  std::map<int, std::set<int>> barrier_arrived_;  // group -> node ids
  // key (group, -1: shutdown) -> barriers of it completed in this
  // generation; after a takeover, the most any node reported passing.
  std::map<int, int> barriers_passed_;
  bool table_sent_ = false;
  std::chrono::steady_clock::time_point started_;  // start(): the start-up window opens
  int registrations_ = 0;  // REGISTER messages taken, late ones after a failure included
  // conn -> the nodes it was told its timed-out barrier waits for
  std::map<int, std::string> gave_up_;
  bool finished_ = false;  // the shutdown barrier completed
  // caravan_suspend: some worker asked that this shutdown barrier suspend
  // the job; then, until the next table, the scheduler re-forms it.
  bool suspend_asked_ = false;
  bool reforming_ = false;
  bool counts_known_ = true;  // false after a suspend until a worker registers
  int counts_from_ = -1;      // the connection of the node that brought them
  NodeInfo counts_source_;    // and that node
  std::chrono::steady_clock::time_point resume_deadline_;
  // The servers of the last generation (after a regroup, its nodes) not
  // yet registered again (key: server_key, value: described), and until
  // when they are waited for.
  std::map<std::string, std::string> returning_;
  std::chrono::steady_clock::time_point returning_deadline_;
  int suspends_ = 0;
  // Re-forming after a lost node (CARAVAN_ELASTIC): every node left is in
  // returning_, and the counts are those that come back.
  bool regrouping_ = false;
  // The ended generation's connections (to their server_key) that have not
  // yet answered the regroup.
  std::map<int, std::string> unanswered_;
  // Taking a job over from the nodes' reports (handle_report): the table
  // the first reported, until when the others are awaited, and the
  // registrations that came meanwhile (taken once the job is recovered).
  bool recovering_ = false;
  std::vector<NodeInfo> reported_table_;
  std::chrono::steady_clock::time_point recovery_deadline_;
  std::vector<std::pair<int, NodeInfo>> held_registrations_;
  // The reporting nodes that wait in the shutdown barrier (their REPORT's
  // kFinal): when all do, those that did not report passed it and left.
  std::set<int> reported_in_shutdown_;
  // A regroup taken over (take_regroup_over): returning nodes are taken
  // whether or not returning_ names them, and the table waits for
  // awaited_back_ of them (the last generation's size, the lost included)
  // or for returning_deadline_.
  bool regroup_taken_over_ = false;
  int awaited_back_ = 0;
  std::string failure_;
  bool participant_ = false;
  NodeInfo self_;
  std::map<int, int> local_done_;  // barrier key -> completions seen
  std::function<void(const std::string&)> on_failure_;
  // When each connection was last heard from (any message counts).
  std::map<int, std::chrono::steady_clock::time_point> last_seen_;
  HeartbeatTimer heartbeat_;
  // Sends heartbeats and judges silence, except just after this process
  // itself stalled (HeartbeatTimer).
  void on_heartbeat_tick(bool after_stall);
};

}  // namespace caravan
