// Nodes of a running job die (kill -9) or hang (SIGSTOP): every other node
// must notice, say which node was lost, and exit non-zero within the
// heartbeat timeout plus 5 s. No launcher: the engine alone must do it.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
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

  // `extra` comes last, so it overrides, and after it `one_node`'s for the
  // node it names ("worker 1"), which starts once every other node has
  // registered (so that all of them hear how the job ends); `max_elements`
  // caps each tensor of sum_check_worker.
  Job(int num_workers, int num_servers, const Env& extra = {},
      const std::string& max_elements = "10000", const std::pair<std::string, Env>& one_node = {}) {
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
    std::vector<std::pair<std::string, ProcessSpec>> nodes;
    for (int i = 0; i < num_servers; ++i) {
      nodes.push_back({"server " + std::to_string(i), spec("server", CARAVAN_SERVER_BIN)});
      nodes.back().second.set_env.push_back({"CARAVAN_SERVER_ID", std::to_string(i)});
    }
    for (int i = 0; i < num_workers; ++i) {
      nodes.push_back({"worker " + std::to_string(i), spec("worker", SUM_CHECK_WORKER_BIN)});
      nodes.back().second.set_env.push_back({"DMLC_WORKER_ID", std::to_string(i)});
    }
    servers.resize(static_cast<size_t>(num_servers));
    workers.resize(static_cast<size_t>(num_workers));
    auto slot = [&](size_t i) -> std::unique_ptr<RunningProcess>& {
      return i < servers.size() ? servers[i] : workers[i - servers.size()];
    };
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].first != one_node.first)
        slot(i) = std::make_unique<RunningProcess>(nodes[i].second);
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].first != one_node.first) continue;
      for (size_t j = 0; j < nodes.size(); ++j)
        if (j != i) slot(j)->wait_for_output("registered with the scheduler", 30);
      ProcessSpec& odd = nodes[i].second;
      odd.set_env.insert(odd.set_env.end(), one_node.second.begin(), one_node.second.end());
      slot(i) = std::make_unique<RunningProcess>(odd);
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

// A worker that reaches the shutdown barrier while another goes on: its
// barrier times out naming the node the scheduler still waits for (it said
// only "other nodes" before). Worker 0's long CARAVAN_OP_TIMEOUT keeps its
// own push_pull, which waits for worker 1's push, from ending the job first.
TEST(NodeFailure, BarrierTimeoutNamesTheNodesNotThere) {
  constexpr int kOpTimeout = 2;
  Job job(2, 1, {{"CARAVAN_OP_TIMEOUT", "60"}}, "10000",
          {"worker 1",
           {{"SUM_CHECK_ROUNDS", "1"}, {"CARAVAN_OP_TIMEOUT", std::to_string(kOpTimeout)}}});
  ProcessResult r = job.workers[1]->wait(kOpTimeout + 20);
  expect_clean_failure(r, kOpTimeout + 20);
  EXPECT_NE(r.output.find("the shutdown barrier timed out after 2 s: the scheduler at "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("is still waiting for 1 node(s) that have not arrived: worker 0 (pid " +
                          std::to_string(job.workers[0]->pid()) + " at "),
            std::string::npos)
      << r.output;
  // The others hear that worker 1 gave up, and on whom; not that it crashed.
  ProcessResult w0 = job.workers[0]->wait(20);
  expect_clean_failure(w0, 20);
  EXPECT_NE(w0.output.find("the scheduler aborted the job: worker 1 (pid " +
                           std::to_string(job.workers[1]->pid()) + " at 127.0.0.1, "),
            std::string::npos)
      << w0.output;
  EXPECT_NE(w0.output.find("left after its barrier timed out waiting for 1 node(s) that have not "
                           "arrived: worker 0"),
            std::string::npos)
      << w0.output;
}

// A node that registered waits for the scheduler's start-up deadline, which
// names the missing nodes. A server started before the scheduler gave up
// first, and the scheduler then ended the job blaming it ("lost server ...
// during start-up") and named nobody.
TEST(NodeFailure, StartUpTimeoutNamesTheMissingNodesNotTheOnesThatWaited) {
  int port = free_port();
  auto spec = [&](const std::string& role) {
    ProcessSpec s;
    s.argv = {CARAVAN_SERVER_BIN};
    s.set_env = node_env(role, port, 1, 1);
    s.set_env.push_back({"PS_VERBOSE", "1"});
    s.set_env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});
    s.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", "3"});
    return s;
  };
  RunningProcess server(spec("server"));
  ASSERT_TRUE(server.wait_for_output("listening at", 10)) << server.output();
  // The launch skew under test, not a wait for anything: the server's
  // start-up clock has run 1.5 s of its 3 when the scheduler starts.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  RunningProcess scheduler(spec("scheduler"));
  const std::string why =
      "start-up timed out after 3 s (CARAVAN_CONNECT_TIMEOUT): registered 1 "
      "of 1 servers (DMLC_NUM_SERVER) and 0 of 1 workers (DMLC_NUM_WORKER); "
      "missing 0 server(s) and 1 worker(s)";
  ProcessResult s = server.wait(15);
  expect_clean_failure(s, 15);
  EXPECT_NE(s.output.find("the scheduler aborted the job: " + why), std::string::npos) << s.output;
  ProcessResult r = scheduler.wait(15);
  expect_clean_failure(r, 15);
  EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("lost server"), std::string::npos) << r.output;
}

// One node launched with a setting the rest of the job does not share: the
// scheduler ends the job at start-up, and every node exits naming the
// setting, both values and the node. Before, each of these joined quietly,
// then summed wrongly, averaged over the wrong count, waited out
// CARAVAN_OP_TIMEOUT or CARAVAN_CONNECT_TIMEOUT, or lost a healthy node.
struct Mismatch {
  const char* label;
  const char* node;
  const char* var;    // nullptr: the job's van's MAX_MESSAGE_BYTES
  const char* value;  // nullptr: the other van
  const char* says;   // nullptr: "has the van '<the other van>'"
};

void PrintTo(const Mismatch& m, std::ostream* os) {
  *os << m.node << " with " << (m.var ? m.var : "the van's MAX_MESSAGE_BYTES");
}

class SettingMismatch : public ::testing::TestWithParam<Mismatch> {};

// The van the job does not use (VanTcp.failure_test runs this file over tcp).
std::string other_van() {
  const char* van = std::getenv("CARAVAN_VAN");
  return van && std::string(van) == "tcp" ? "zmq" : "tcp";
}

// The job's van's message limit: CARAVAN_VAN_ZMQ_MAX_MESSAGE_BYTES or _TCP_.
std::string van_limit_var() {
  return other_van() == "tcp" ? "CARAVAN_VAN_ZMQ_MAX_MESSAGE_BYTES"
                              : "CARAVAN_VAN_TCP_MAX_MESSAGE_BYTES";
}

TEST_P(SettingMismatch, EndsTheJobAtStartUpNamingIt) {
  const Mismatch& m = GetParam();
  std::string var = m.var ? m.var : van_limit_var();
  std::string value = m.value ? m.value : other_van();
  std::string says = m.says ? m.says : "has the van '" + value + "'";
  auto start = std::chrono::steady_clock::now();
  Job job(2, 1, {}, "10000", {m.node, {{var, value}}});
  std::string role = m.node;
  role = role.substr(0, role.find(' '));
  std::string odd_one =
      role + " (pid " + std::to_string(job.node(role, std::atoi(m.node + role.size() + 1))->pid());
  for (RunningProcess* p : job.all()) {
    ProcessResult r = p->wait(10);
    expect_clean_failure(r, 10);
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(odd_one), std::string::npos) << r.output;
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

// Nodes that start after the job ended at start-up hear why from the
// scheduler at once (they waited out CARAVAN_CONNECT_TIMEOUT, then said they
// could not reach it); once every node has been told, the scheduler exits.
TEST(Settings, LatecomersAfterAStartUpFailureAreToldWhy) {
  int port = free_port();
  auto spec = [&](const std::string& role, const std::string& bin, const Env& extra) {
    ProcessSpec s;
    s.argv = {bin};
    s.set_env = node_env(role, port, 2, 1);
    s.set_env.push_back({"PS_VERBOSE", "1"});
    s.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", "60"});
    s.set_env.insert(s.set_env.end(), extra.begin(), extra.end());
    return s;
  };
  RunningProcess scheduler(spec("scheduler", CARAVAN_SERVER_BIN, {}));
  RunningProcess odd(spec("worker", SUM_CHECK_WORKER_BIN, {{"DMLC_NUM_WORKER", "3"}}));
  const std::string why = "has DMLC_NUM_WORKER=3 but the scheduler has DMLC_NUM_WORKER=2";
  expect_clean_failure(odd.wait(10), 10);
  ASSERT_TRUE(scheduler.wait_for_output("to tell the 2 node(s) yet to register", 10))
      << scheduler.output();
  for (auto [role, bin] : {std::pair<std::string, std::string>{"server", CARAVAN_SERVER_BIN},
                           {"worker", SUM_CHECK_WORKER_BIN}}) {
    RunningProcess late(spec(role, bin, {}));
    ProcessResult r = late.wait(10);
    expect_clean_failure(r, 10);
    EXPECT_NE(r.output.find("the scheduler aborted the job: worker (pid " +
                            std::to_string(odd.pid()) + " at "),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  }
  expect_clean_failure(scheduler.wait(10), 10);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, SettingMismatch,
    ::testing::Values(
        Mismatch{"NumWorker", "worker 1", "DMLC_NUM_WORKER", "3",
                 "has DMLC_NUM_WORKER=3 but the scheduler has DMLC_NUM_WORKER=2"},
        Mismatch{"NumServer", "server 0", "DMLC_NUM_SERVER", "2",
                 "has DMLC_NUM_SERVER=2 but the scheduler has DMLC_NUM_SERVER=1"},
        Mismatch{"Async", "server 0", "BYTEPS_ENABLE_ASYNC", "1", "has BYTEPS_ENABLE_ASYNC=1"},
        Mismatch{"Partition", "worker 1", "BYTEPS_PARTITION_BYTES", "1000",
                 "has BYTEPS_PARTITION_BYTES=1000"},
        // Workers that split keys otherwise push one key to different servers.
        Mismatch{"MixedMode", "worker 1", "BYTEPS_ENABLE_MIXED_MODE", "1",
                 "has BYTEPS_ENABLE_MIXED_MODE=1"},
        Mismatch{"HeartbeatOff", "worker 0", "PS_HEARTBEAT_INTERVAL", "0",
                 "has PS_HEARTBEAT_INTERVAL=0 (off) but the scheduler has PS_HEARTBEAT_INTERVAL=1"},
        Mismatch{"Van", "worker 1", "CARAVAN_VAN", nullptr, nullptr},
        // A server with a lower limit dropped the workers' larger messages,
        // and they waited out CARAVAN_OP_TIMEOUT.
        Mismatch{"VanMessageLimit", "server 0", nullptr, "100000",
                 "has a van message limit of 100000 bytes"}),
    [](const ::testing::TestParamInfo<Mismatch>& p) { return std::string(p.param.label); });

}  // namespace
}  // namespace caravan::test
