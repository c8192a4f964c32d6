// Nodes of a running job die (kill -9) or hang (SIGSTOP): every other node
// must notice, say which node was lost, and exit non-zero within the
// heartbeat timeout plus 5 s. No launcher: the engine alone must do it.
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

constexpr int kHeartbeatTimeout = 3;
constexpr double kDeadline = kHeartbeatTimeout + 5;

using Env = std::vector<std::pair<std::string, std::string>>;

struct Job {
  std::unique_ptr<RunningProcess> scheduler;
  std::vector<std::unique_ptr<RunningProcess>> servers, workers;

  // `extra` comes last, so it overrides; `max_elements` caps each tensor
  // of sum_check_worker.
  Job(int num_workers, int num_servers, const Env& extra = {},
      const std::string& max_elements = "10000") {
    int port = free_port();
    auto spec = [&](const std::string& role, const std::string& bin) {
      ProcessSpec s;
      s.argv = {bin};
      if (role == "worker") s.argv = {bin, "100000", max_elements};  // runs until stopped
      s.set_env = node_env(role, port, num_workers, num_servers);
      s.set_env.push_back({"PS_VERBOSE", "1"});
      s.set_env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});  // a 1-worker job uses its server
      s.set_env.push_back({"PS_HEARTBEAT_INTERVAL", "1"});
      s.set_env.push_back({"PS_HEARTBEAT_TIMEOUT", std::to_string(kHeartbeatTimeout)});
      s.set_env.insert(s.set_env.end(), extra.begin(), extra.end());
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

  // The scheduler, or server or worker `index`.
  RunningProcess* node(const std::string& role, int index) {
    if (role == "scheduler") return scheduler.get();
    return (role == "server" ? servers : workers).at(index).get();
  }

  std::vector<RunningProcess*> all() {
    std::vector<RunningProcess*> out = {scheduler.get()};
    for (auto* group : {&servers, &workers})
      for (auto& p : *group) out.push_back(p.get());
    return out;
  }
};

// A process that failed as it should: in time, by exiting with an error
// status of its own, not killed by a signal (a crash while tearing down).
void expect_clean_failure(const ProcessResult& r, double deadline) {
  EXPECT_FALSE(r.timed_out) << "still running " << deadline << " s after the failure:\n"
                            << r.output;
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << ":\n" << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
}

// Waits for every process but `victim`; each must exit non-zero in time,
// and the workers must name what was lost.
void expect_all_gone(Job& job, RunningProcess* victim, const std::string& lost) {
  for (RunningProcess* p : job.all()) {
    if (p == victim) continue;
    expect_clean_failure(p->wait(kDeadline), kDeadline);
  }
  for (auto& w : job.workers) {
    if (w.get() == victim) continue;
    EXPECT_NE(w->output().find(lost), std::string::npos) << w->output();
  }
}

// A job of `workers` and `servers` in which, once every node has joined,
// `role` `index` gets `sig`: every other node must exit in time, and the
// workers must name what was lost.
void expect_loss_ends_the_job(int workers, int servers, const std::string& role, int index, int sig,
                              const std::string& lost) {
  Job job(workers, servers);
  ASSERT_TRUE(job.started());
  RunningProcess* victim = job.node(role, index);
  victim->signal(sig);
  expect_all_gone(job, victim, lost);
}

TEST(NodeFailure, KilledServerEndsTheJobNamingIt) {
  expect_loss_ends_the_job(2, 2, "server", 1, SIGKILL, "lost server 1");
}

TEST(NodeFailure, KilledWorkerEndsTheJobNamingIt) {
  expect_loss_ends_the_job(2, 2, "worker", 0, SIGKILL, "lost worker 0");
}

TEST(NodeFailure, KilledSchedulerEndsTheJob) {
  expect_loss_ends_the_job(2, 1, "scheduler", 0, SIGKILL, "scheduler");
}

TEST(NodeFailure, StoppedServerIsDeclaredDeadByHeartbeat) {
  expect_loss_ends_the_job(2, 2, "server", 0, SIGSTOP, "no heartbeat");
}

TEST(NodeFailure, StoppedSchedulerIsNoticedByEveryNode) {
  expect_loss_ends_the_job(1, 1, "scheduler", 0, SIGSTOP, "has been silent");
}

// Regression: a worker whose push_pulls time out leaves the process with
// partitions still queued behind its scheduling credit. Closing the van at
// exit settled the sends in flight, and their handlers sent the queued
// partitions through the KV endpoint already destroyed: a segfault, or
// std::bad_alloc from the freed memory. Heartbeats are off so that the
// stopped server is not declared lost: the timeout alone ends the workers.
TEST(NodeFailure, WorkerTimingOutWithPartitionsQueuedExitsCleanly) {
  constexpr int kOpTimeout = 3;
  Job job(1, 2,
          {{"PS_HEARTBEAT_INTERVAL", "0"},
           {"CARAVAN_OP_TIMEOUT", std::to_string(kOpTimeout)},
           {"BYTEPS_SCHEDULING_CREDIT", "2"}},
          "1000000");
  ASSERT_TRUE(job.started());
  job.servers[1]->signal(SIGSTOP);
  ProcessResult r = job.workers[0]->wait(kOpTimeout + 10);
  expect_clean_failure(r, kOpTimeout + 10);
  EXPECT_NE(r.output.find("timed out after 3 s (CARAVAN_OP_TIMEOUT) waiting for server 1"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace caravan::test
