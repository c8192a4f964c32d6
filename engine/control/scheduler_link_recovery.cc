// CARAVAN_ELASTIC: a node's link outlives its scheduler. Lost after the
// node table (its connection closed, or silent past PS_HEARTBEAT_TIMEOUT),
// the scheduler is no failure: the data plane needs none, so training goes
// on, and the link connects to DMLC_PS_ROOT_URI:DMLC_PS_ROOT_PORT again and
// again until a scheduler started there takes the job over from the
// nodes' REPORTs (SchedulerService, scheduler_recovery.cc). Barriers wait
// for it; CARAVAN_RESUME_TIMEOUT bounds the wait. Lost before the table
// (start-up, or a regroup under way), it registers again with the next
// (register_again).
#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "engine/base/log.h"
#include "engine/base/net.h"
#include "engine/control/scheduler_link.h"

namespace caravan {

bool SchedulerLink::orphan(const std::string& why) {
  if (!config_.elastic || !have_table_ || closing_ || left_ || orphaned_ || !failure_.empty())
    return false;
  orphaned_ = true;
  reported_ = false;
  cv_.notify_all();
  reconnect_threads_.emplace_back([this, why] { reconnect(why); });
  return true;
}

void SchedulerLink::reconnect(const std::string& why) {
  CARAVAN_LOG(WARNING) << why << "; training goes on (CARAVAN_ELASTIC), and this node reports the "
                       << "job to a scheduler started again at " << scheduler_name()
                       << ", for up to " << config_.resume_timeout_s
                       << " s (CARAVAN_RESUME_TIMEOUT)";
  bool taken = reach_next_scheduler(
      why + "; no scheduler took the job over", [this] { return !orphaned_; },
      [this](int fd, std::chrono::steady_clock::time_point deadline) {
        return report_to(fd, deadline);
      });
  if (taken) {
    CARAVAN_LOG(WARNING) << "the scheduler at " << scheduler_name()
                         << " took the job over; this node goes on in it";
  }
}

bool SchedulerLink::reach_next_scheduler(
    const std::string& gave_up, const std::function<bool()>& not_needed,
    const std::function<bool(int fd, std::chrono::steady_clock::time_point)>& attempt) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(config_.resume_timeout_s);
  // Between attempts: a scheduler that is starting takes a moment to listen.
  constexpr auto kPause = std::chrono::milliseconds(200);
  constexpr long long kConnectMs = 1000;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_ || !failure_.empty() || not_needed()) return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      fail(gave_up + " within " + std::to_string(config_.resume_timeout_s) +
           " s (CARAVAN_RESUME_TIMEOUT)");
      return false;
    }
    std::string err;
    int fd =
        net::connect_tcp(config_.root_uri, config_.root_port, net::now_ms() + kConnectMs, &err);
    if (fd >= 0 && attempt(fd, deadline)) return true;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, kPause, [&] { return closing_ || !failure_.empty(); });
  }
}

bool SchedulerLink::report_to(int fd, std::chrono::steady_clock::time_point deadline) {
  int conn = hub_.adopt(fd);
  ControlMessage report;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attempt_lost_ = false;
    authenticated_ = false;
    conn_ = conn;
    report.head.type = wire::Type::kReport;
    report.head.sender = my_id_;
    report.head.cmd = generation_;
    report.table = table_;
    report.auth = job_nonce_at_join_;
    report.barriers.insert(barriers_done_.begin(), barriers_done_.end());
    if (in_shutdown_barrier_) report.head.flags |= wire::kFinal;
  }
  try {
    if (config_.job_token) {
      // The hub thread uses auth_ only for this connection's answers, which
      // come after the hello.
      auth_ = std::make_unique<AuthInitiator>(config_.job_token);
      long long until =
          std::min(net::now_ms() + 1000LL * config_.connect_timeout_s,
                   net::now_ms() + std::chrono::duration_cast<std::chrono::milliseconds>(
                                       deadline - std::chrono::steady_clock::now())
                                       .count());
      authenticate(until);
    }
  } catch (const Error& e) {
    CARAVAN_VLOG(1) << "reporting the job to the scheduler at " << scheduler_name() << ": "
                    << e.what();
    hub_.close(conn);
    return false;
  }
  if (!hub_.send(conn, report.head, control_body(report))) return false;
  std::unique_lock<std::mutex> lock(mu_);
  reported_ = true;
  CARAVAN_VLOG(1) << "reported the job (" << table_.size() << " nodes) to the scheduler at "
                  << scheduler_name();
  // A scheduler taking the job over answers once every node reported, or
  // CARAVAN_CONNECT_TIMEOUT passed: what took the connection and says
  // nothing for longer (a stopped scheduler's socket) is tried again.
  auto answer_by = std::min(deadline, std::chrono::steady_clock::now() +
                                          std::chrono::seconds(config_.connect_timeout_s + 5));
  cv_.wait_until(lock, answer_by,
                 [&] { return !orphaned_ || attempt_lost_ || closing_ || !failure_.empty(); });
  if (!orphaned_ && failure_.empty()) return true;
  reported_ = false;
  bool lost = attempt_lost_;
  lock.unlock();
  if (!lost) hub_.close(conn);
  return false;
}

bool SchedulerLink::lose_while_joining(const std::string& why) {
  if (!config_.elastic || !joining_ || have_table_ || closing_ || !failure_.empty() ||
      !lost_joining_.empty())
    return false;
  lost_joining_ = why;
  cv_.notify_all();
  return true;
}

void SchedulerLink::register_again(const NodeInfo& self, const std::string& why) {
  CARAVAN_LOG(WARNING) << why << " before the job formed; this node registers again with a "
                       << "scheduler started at " << scheduler_name()
                       << " (CARAVAN_ELASTIC), for up to " << config_.resume_timeout_s
                       << " s (CARAVAN_RESUME_TIMEOUT)";
  reach_next_scheduler(
      why + "; no scheduler took this node's registration", [] { return false; },
      [&](int fd, std::chrono::steady_clock::time_point) {
        int conn = hub_.adopt(fd);
        {
          std::lock_guard<std::mutex> lock(mu_);
          attempt_lost_ = false;
          authenticated_ = false;
          registering_again_ = true;
          conn_ = conn;
          last_seen_ = std::chrono::steady_clock::now();
        }
        bool sent = true;
        if (config_.job_token) {
          // As in report_to: the hub thread uses auth_ only for this
          // connection's answers, which come after the hello.
          auth_ = std::make_unique<AuthInitiator>(config_.job_token);
          try {
            authenticate(net::now_ms() + 1000LL * config_.connect_timeout_s);
          } catch (const Error& e) {
            CARAVAN_VLOG(1) << "registering again with the scheduler at " << scheduler_name()
                            << ": " << e.what();
            sent = false;
          }
        }
        sent = sent && send_register(self);
        {
          std::lock_guard<std::mutex> lock(mu_);
          registering_again_ = false;
          if (sent && !attempt_lost_) return true;
        }
        hub_.close(conn);
        return false;
      });
}

}  // namespace caravan
