// Nodes of a running job die (kill -9) or hang (SIGSTOP): every other node
// must notice, say which node was lost, and exit non-zero within the
// heartbeat timeout plus 5 s. No launcher: the engine alone must do it.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

constexpr int kHeartbeatTimeout = 3;
constexpr double kDeadline = kHeartbeatTimeout + 5;

struct Job {
  std::unique_ptr<RunningProcess> scheduler;
  std::vector<std::unique_ptr<RunningProcess>> servers, workers;

  Job(int num_workers, int num_servers) {
    int port = free_port();
    auto spec = [&](const std::string& role, const std::string& bin) {
      ProcessSpec s;
      s.argv = {bin};
      if (role == "worker") s.argv = {bin, "100000", "10000"};  // runs until stopped
      s.set_env = node_env(role, port, num_workers, num_servers);
      s.set_env.push_back({"PS_VERBOSE", "1"});
      s.set_env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});  // a 1-worker job uses its server
      s.set_env.push_back({"PS_HEARTBEAT_INTERVAL", "1"});
      s.set_env.push_back({"PS_HEARTBEAT_TIMEOUT", std::to_string(kHeartbeatTimeout)});
      return s;
    };
    scheduler = std::make_unique<RunningProcess>(spec("scheduler", CARAVAN_SERVER_BIN));
    for (int i = 0; i < num_servers; ++i) {
      auto s = spec("server", CARAVAN_SERVER_BIN);
      s.set_env.push_back({"CARAVAN_SERVER_ID", std::to_string(i)});
      servers.push_back(std::make_unique<RunningProcess>(s));
    }
    for (int i = 0; i < num_workers; ++i) {
      auto s = spec("worker", SUM_CHECK_WORKER_BIN);
      s.set_env.push_back({"DMLC_WORKER_ID", std::to_string(i)});
      workers.push_back(std::make_unique<RunningProcess>(s));
    }
  }

  // Every node logged that it joined (PS_VERBOSE=1).
  bool started() {
    for (auto* group : {&servers, &workers})
      for (auto& p : *group)
        if (!p->wait_for_output("joined the job as", 30)) return false;
    return true;
  }

  std::vector<RunningProcess*> all() {
    std::vector<RunningProcess*> out = {scheduler.get()};
    for (auto* group : {&servers, &workers})
      for (auto& p : *group) out.push_back(p.get());
    return out;
  }
};

// Waits for every process but `victim`; each must exit non-zero in time,
// and the workers must name what was lost.
void expect_all_gone(Job& job, RunningProcess* victim, const std::string& lost) {
  for (RunningProcess* p : job.all()) {
    if (p == victim) continue;
    ProcessResult r = p->wait(kDeadline);
    EXPECT_FALSE(r.timed_out) << "still running " << kDeadline << " s after the failure:\n"
                              << r.output;
    EXPECT_NE(r.exit_code, 0) << r.output;
  }
  for (auto& w : job.workers) {
    if (w.get() == victim) continue;
    EXPECT_NE(w->output().find(lost), std::string::npos) << w->output();
  }
}

TEST(NodeFailure, KilledServerEndsTheJobNamingIt) {
  Job job(2, 2);
  ASSERT_TRUE(job.started());
  job.servers[1]->signal(SIGKILL);
  expect_all_gone(job, job.servers[1].get(), "lost server 1");
}

TEST(NodeFailure, KilledWorkerEndsTheJobNamingIt) {
  Job job(2, 2);
  ASSERT_TRUE(job.started());
  job.workers[0]->signal(SIGKILL);
  expect_all_gone(job, job.workers[0].get(), "lost worker 0");
}

TEST(NodeFailure, KilledSchedulerEndsTheJob) {
  Job job(2, 1);
  ASSERT_TRUE(job.started());
  job.scheduler->signal(SIGKILL);
  expect_all_gone(job, job.scheduler.get(), "scheduler");
}

TEST(NodeFailure, StoppedServerIsDeclaredDeadByHeartbeat) {
  Job job(2, 2);
  ASSERT_TRUE(job.started());
  job.servers[0]->signal(SIGSTOP);
  expect_all_gone(job, job.servers[0].get(), "no heartbeat");
}

TEST(NodeFailure, StoppedSchedulerIsNoticedByEveryNode) {
  Job job(1, 1);
  ASSERT_TRUE(job.started());
  job.scheduler->signal(SIGSTOP);
  expect_all_gone(job, job.scheduler.get(), "has been silent");
}

}  // namespace
}  // namespace caravan::test
