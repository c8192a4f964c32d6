// A server's or worker's connection to the scheduler: registration, the
// node table, barriers, and the news that the job failed. With
// CARAVAN_ELASTIC, a scheduler lost after the table is no failure: the
// node trains on and reports the job to the scheduler started again at
// the same address (scheduler_link_recovery.cc); barriers wait for it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/config.h"
#include "engine/base/error.h"
#include "engine/base/job_token.h"
#include "engine/control/control_auth.h"
#include "engine/control/control_hub.h"
#include "engine/control/heartbeat.h"
#include "engine/control/node_info.h"

namespace caravan {

// Thrown by SchedulerLink::join when the workers resumed a suspended job
// with fewer servers than this one: it leaves cleanly.
class LeftOutOfJob : public Error {
 public:
  explicit LeftOutOfJob(const std::string& why) : Error(CARAVAN_OK, why) {}
};

class SchedulerLink {
 public:
  // Called once, on the control thread, when the job fails: the scheduler
  // sent ABORT or the connection to it broke.
  using FailureHandler = std::function<void(const std::string& why)>;

  SchedulerLink(const JobConfig& config, FailureHandler on_failure);
  ~SchedulerLink();

  // Connects, answers the CARAVAN_JOB_TOKEN challenge when the job has a
  // token, registers `self` and waits for the node table (deadline:
  // CARAVAN_CONNECT_TIMEOUT; after a suspend, CARAVAN_RESUME_TIMEOUT as
  // `resuming` says). Returns the table; fills self.id and rank.
  std::vector<NodeInfo> join(NodeInfo& self, bool resuming = false);
  // After join(): the job's generation (the NODE_TABLE's cmd), which every
  // data message carries (KVEndpoint::set_generation).
  int generation() const { return generation_; }
  // After join(), with a token: the job nonce the scheduler vouched for.
  const auth::Nonce& job_nonce() const { return auth_->job_nonce(); }
  // Waits until every node of `group` arrived (final: the shutdown barrier
  // of all nodes). timeout_s < 0 waits as long as the job is alive.
  // `suspend` (with final) asks that the job be suspended, not ended.
  // Returns whether the shutdown barrier completed as a suspend (some
  // worker asked for one): the job goes on with whoever resumes.
  bool barrier(int group, bool final, int timeout_s, bool suspend = false);
  // Ends the job for every node, with `why` (this node's own failure: the
  // others would otherwise hear only that its connection closed), and
  // blocks until the scheduler has answered with the job's ABORT, up to
  // kEndJobDeadline: a node that closed its connection sooner could have its
  // reason reset away in flight, or overtaken by the close. Returns at once
  // when the job has already failed or the link is closing; a second call
  // sends nothing and waits as the first.
  void end_job(const std::string& why);
  // CARAVAN_ELASTIC: this node leaves the job, which regroups without it
  // (a machine of local ranks that lost one); waits as end_job(). Where
  // the job cannot regroup now, the scheduler ends it, saying `why`.
  void leave_job(const std::string& why);
  static constexpr std::chrono::seconds kEndJobDeadline{5};
  // Hangs up; after the shutdown barrier this is the clean end.
  void close();
  std::string failure() const;
  // The failure's code (0: none): CARAVAN_ERR_REGROUPED when the scheduler
  // regroups the job without a lost node (kAbortRegroup).
  int failure_code() const;
  // Waits up to `deadline` for the link to fail; whether it failed with
  // the scheduler's regroup. A peer's loss reaches a node over the van
  // and the scheduler's word over this link, in either order. While no
  // scheduler has the job (CARAVAN_ELASTIC, lost), waits for the next one
  // to take it over (up to CARAVAN_RESUME_TIMEOUT), then up to `deadline`.
  bool wait_regrouped(std::chrono::milliseconds deadline);
  // When heartbeats are on and the scheduler has missed one (silent for
  // longer than PS_HEARTBEAT_INTERVAL): "the scheduler at ... has been
  // silent for 2.4 s as well ...", for an error that a loss elsewhere
  // caused (a server that noticed first and left); "" otherwise.
  std::string silence_note() const;

 private:
  void on_message(ControlMessage&& msg);
  void on_auth_message(const ControlMessage& msg);
  void on_lost(const std::string& why);
  // Blocks until the challenge on conn_ is answered both ways; throws
  // otherwise (also when that connection is lost meanwhile).
  void authenticate(long long deadline_ms);
  // CARAVAN_ELASTIC (scheduler_link_recovery.cc): whether the loss of the
  // scheduler's connection leaves this node orphaned rather than failed;
  // then starts reconnect(). Caller holds mu_.
  bool orphan(const std::string& why);
  // On its own thread: connects to DMLC_PS_ROOT_URI:PORT again and again
  // until a scheduler there takes the job over from this node's REPORT, or
  // fails the link after CARAVAN_RESUME_TIMEOUT.
  void reconnect(const std::string& why);
  // Connects to DMLC_PS_ROOT_URI:PORT again and again (a pause between
  // attempts) until `attempt`, given each connection and the deadline,
  // says a scheduler there took this node; or until closing, a failure or
  // `not_needed` (called with mu_ held) ends the search; or fails the link
  // with `gave_up` after CARAVAN_RESUME_TIMEOUT. Whether an attempt took.
  bool reach_next_scheduler(
      const std::string& gave_up, const std::function<bool()>& not_needed,
      const std::function<bool(int fd, std::chrono::steady_clock::time_point)>& attempt);
  // One attempt of reconnect(); whether the scheduler took the job over.
  bool report_to(int fd, std::chrono::steady_clock::time_point deadline);
  // CARAVAN_ELASTIC: whether the loss of the scheduler's connection (`why`)
  // while join() waits for the table makes join() register again rather
  // than fail; then wakes it. Caller holds mu_.
  bool lose_while_joining(const std::string& why);
  // On join()'s thread: connects to DMLC_PS_ROOT_URI:PORT again and again
  // until a scheduler there takes this node's REGISTER, or fails the link
  // after CARAVAN_RESUME_TIMEOUT.
  void register_again(const NodeInfo& self, const std::string& why);
  bool send_register(const NodeInfo& self);
  // Sends BARRIER for `group`; false when the connection is gone.
  // `passed`: how many barriers of this key this node has passed, which
  // the scheduler compares with its own count (head.timestamp).
  bool send_barrier(int group, bool final, bool suspend, int passed);
  void fail(const std::string& why, int code = CARAVAN_ERR_PEER_LOST);
  std::string scheduler_name() const;
  // After a barrier timed out: the scheduler's word on which nodes it still
  // waits for (BARRIER_WAITING), or a general phrase when it does not answer.
  // Called and returns with `lock` on mu_ held.
  std::string ask_who_is_missing(std::unique_lock<std::mutex>& lock, int group, bool final);

  JobConfig config_;
  FailureHandler on_failure_;
  ControlHub hub_;
  std::atomic<int> conn_{-1};  // the scheduler's connection; another after a reconnect
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool have_table_ = false;
  std::vector<NodeInfo> table_;
  int my_id_ = 0;
  int generation_ = 0;
  std::map<int, int> barriers_done_;            // group (-1: shutdown) -> count
  bool suspended_ = false;                      // the shutdown barrier completed as a suspend
  bool not_needed_ = false;                     // ABORT kAbortNotNeeded
  std::map<int, std::string> barrier_waiting_;  // group (-1: shutdown) -> the answer
  bool closing_ = false;
  bool ended_job_ = false;  // end_job() sent ABORT
  std::string failure_;
  int failure_code_ = CARAVAN_ERR_PEER_LOST;
  std::unique_ptr<AuthInitiator> auth_;  // with CARAVAN_JOB_TOKEN
  bool authenticated_ = false;
  std::chrono::steady_clock::time_point last_seen_;  // the scheduler, last heard
  bool heard_ = false;                               // any message from the scheduler yet
  // CARAVAN_ELASTIC: the scheduler was lost and none has taken the job
  // over yet; epoch_ counts the takeovers (a barrier sent before one is
  // sent again); attempt_lost_: the connection of a reconnect attempt
  // closed; reported_: the REPORT went out on conn_.
  bool orphaned_ = false;
  int epoch_ = 0;
  bool attempt_lost_ = false;
  bool reported_ = false;
  std::vector<uint8_t> job_nonce_at_join_;      // with a token: the seals' J, for the REPORT
  std::vector<std::thread> reconnect_threads_;  // joined at close()
  bool left_ = false;  // the shutdown barrier completed (BARRIER_DONE with kFinal came)
  // In barrier() for the shutdown barrier: a REPORT says so (kFinal), so
  // that a scheduler taking the job over can tell nodes that passed it and
  // left from nodes lost.
  bool in_shutdown_barrier_ = false;
  // join() waits for the table; lost_joining_: why the scheduler was lost
  // meanwhile (CARAVAN_ELASTIC), until register_again() runs, which sets
  // registering_again_ while its connection is not yet registered.
  bool joining_ = false;
  std::string lost_joining_;
  bool registering_again_ = false;
  HeartbeatTimer heartbeat_;
  // Sends heartbeats and judges silence, except just after this process
  // itself stalled (HeartbeatTimer).
  void on_heartbeat_tick(bool after_stall);
  // end_job() and leave_job(): ABORT of `kind` with `why`, then the wait
  // for the scheduler's answer.
  void send_abort_and_wait(int32_t kind, const std::string& why);
};

}  // namespace caravan
