// Jobs without servers and machines of several worker processes: a single
// worker (DMLC_NUM_WORKER=1) needs no scheduler or server; the
// BYTEPS_LOCAL_SIZE processes of one machine sum through /dev/shm, local
// rank 0 push_pulls for the machine, and a local rank that dies or hangs is
// named by the others. Real processes, real shared memory, real sockets.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// Every variable that could reach a worker from the test's own environment
// and change what it does.
const std::vector<std::string> kJobVariables = {
    "DMLC_ROLE",         "DMLC_PS_ROOT_URI",  "DMLC_PS_ROOT_PORT",
    "DMLC_NUM_WORKER",   "DMLC_NUM_SERVER",   "DMLC_WORKER_ID",
    "BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE", "BYTEPS_FORCE_DISTRIBUTED",
    "CARAVAN_SERVER_ID", "DMLC_ENABLE_RDMA",  "CARAVAN_VAN"};

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

// Names in /dev/shm that belong to the job with this segment-name prefix.
std::vector<std::string> shm_names(const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.emplace_back(e->d_name);
    closedir(d);
  }
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + " ";
  return s;
}

// What a job without a scheduler names its segments after.
std::string serverless_prefix() { return "caravan-local-u" + std::to_string(getuid()) + "-"; }

// A job without servers that still has DMLC_PS_ROOT_URI and _PORT: they
// name its segments, which keeps tests running side by side apart.
struct NamedJob {
  int port = free_port();
  std::string segment_prefix() const { return "caravan-127.0.0.1-" + std::to_string(port) + "-"; }
  Env env(const std::string& local_size, const std::string& local_rank) const {
    return {{"DMLC_NUM_WORKER", "1"},
            {"DMLC_PS_ROOT_URI", "127.0.0.1"},
            {"DMLC_PS_ROOT_PORT", std::to_string(port)},
            {"DMLC_WORKER_ID", "0"},
            {"BYTEPS_LOCAL_SIZE", local_size},
            {"BYTEPS_LOCAL_RANK", local_rank}};
  }
};

ProcessSpec worker_spec(const std::string& bin, std::vector<std::string> args, Env env) {
  ProcessSpec s;
  s.argv = {bin};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.unset_env = kJobVariables;
  s.set_env = std::move(env);
  s.set_env.push_back({"DMLC_ROLE", "worker"});
  s.timeout_s = 60;
  return s;
}

// The process ended in time, succeeded or failed as `success` says, and
// said every one of `needles`.
void expect_ended(const ProcessResult& r, bool success, const std::vector<std::string>& needles) {
  ASSERT_FALSE(r.timed_out) << r.output;
  if (success)
    EXPECT_EQ(r.exit_code, 0) << r.output;
  else
    EXPECT_GT(r.exit_code, 0) << r.output;
  for (const std::string& needle : needles)
    EXPECT_NE(r.output.find(needle), std::string::npos) << needle << " in:\n" << r.output;
}

void expect_success_saying(const ProcessResult& r, const std::vector<std::string>& needles) {
  expect_ended(r, true, needles);
}

void expect_failure_saying(const ProcessResult& r, const std::vector<std::string>& needles) {
  expect_ended(r, false, needles);
}

// ---- (a) a single worker --------------------------------------------------

TEST(SingleWorker, NeedsNoSchedulerOrServer) {
  ProcessSpec spec = worker_spec(SUM_CHECK_WORKER_BIN, {"2", "100000"},
                                 {{"DMLC_NUM_WORKER", "1"}, {"BYTEPS_LOG_LEVEL", "info"}});
  expect_success_saying(run_process(spec), {"worker 0 of 1: 2 rounds of 32 tensors, all sums exact",
                                            "single worker, push_pull completes in this process"});
}

TEST(SingleWorker, ApiBehavesAsInAJob) {
  ProcessSpec spec = worker_spec(API_MISUSE_WORKER_BIN, {}, {{"DMLC_NUM_WORKER", "1"}});
  expect_success_saying(
      run_process(spec),
      {"0 failures", "ok same tensor in flight twice: tensor 'b' already has a push_pull"});
}

// ---- jobs with a scheduler and servers -------------------------------------

struct ServerSide {
  int port = free_port();
  std::unique_ptr<RunningProcess> scheduler;
  std::vector<std::unique_ptr<RunningProcess>> servers;

  ServerSide(int machines, int num_servers, const Env& extra = {}) {
    auto spec = [&](const std::string& role) {
      ProcessSpec s;
      s.argv = {CARAVAN_SERVER_BIN};
      s.unset_env = kJobVariables;
      s.set_env = node_env(role, port, machines, num_servers);
      s.set_env.insert(s.set_env.end(), extra.begin(), extra.end());
      return s;
    };
    scheduler = std::make_unique<RunningProcess>(spec("scheduler"));
    for (int i = 0; i < num_servers; ++i) {
      auto s = spec("server");
      s.set_env.push_back({"CARAVAN_SERVER_ID", std::to_string(i)});
      servers.push_back(std::make_unique<RunningProcess>(s));
    }
  }

  std::string segment_prefix() const { return "caravan-127.0.0.1-" + std::to_string(port) + "-"; }

  // The environment of a worker process of this job.
  Env worker_env(int machine, int machines, int num_servers, int local_rank, int local_size) {
    Env env = node_env("worker", port, machines, num_servers);
    env.push_back({"DMLC_WORKER_ID", std::to_string(machine)});
    env.push_back({"BYTEPS_LOCAL_RANK", std::to_string(local_rank)});
    env.push_back({"BYTEPS_LOCAL_SIZE", std::to_string(local_size)});
    return env;
  }

  void expect_clean_exit(double timeout_s) {
    for (auto* p : all()) {
      ProcessResult r = p->wait(timeout_s);
      EXPECT_FALSE(r.timed_out) << r.output;
      EXPECT_EQ(r.exit_code, 0) << r.output;
    }
  }

  std::vector<RunningProcess*> all() {
    std::vector<RunningProcess*> out = {scheduler.get()};
    for (auto& s : servers) out.push_back(s.get());
    return out;
  }
};

TEST(SingleWorker, ForceDistributedUsesTheSchedulerAndServer) {
  ServerSide job(1, 1);
  Env env = node_env("worker", job.port, 1, 1);
  env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});
  env.push_back({"BYTEPS_LOG_LEVEL", "info"});
  env.push_back({"PS_VERBOSE", "1"});
  ProcessSpec spec = worker_spec(SUM_CHECK_WORKER_BIN, {"2", "100000"}, env);
  expect_success_saying(
      run_process(spec),
      {"BYTEPS_FORCE_DISTRIBUTED=1: joining the scheduler and servers", "joined the job as",
       "worker 0 of 1: 2 rounds of 32 tensors, all sums exact"});
  job.expect_clean_exit(30);
}

// ---- (b) machines of several local workers --------------------------------

struct LocalShape {
  int machines, local_size, servers;
};

class LocalSumTest : public ::testing::TestWithParam<LocalShape> {};

// Every local rank gets the exact sum of all contributions (sum_check_worker
// sums over rank 0..size-1 = machines x local size), over several rounds,
// every dtype, and tensors cut into many partitions; only local rank 0 of
// each machine joins the job; nothing of the job stays in /dev/shm.
TEST_P(LocalSumTest, EveryLocalRankGetsTheExactSum) {
  LocalShape s = GetParam();
  ServerSide job(s.machines, s.servers);
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int m = 0; m < s.machines; ++m) {
    for (int l = 0; l < s.local_size; ++l) {
      Env env = job.worker_env(m, s.machines, s.servers, l, s.local_size);
      env.push_back({"BYTEPS_PARTITION_BYTES", "16384"});
      env.push_back({"PS_VERBOSE", "1"});
      workers.push_back(
          std::make_unique<RunningProcess>(worker_spec(SUM_CHECK_WORKER_BIN, {"3", "50000"}, env)));
    }
  }
  int size = s.machines * s.local_size;
  std::set<int> ranks;
  int joined_job = 0;
  for (auto& w : workers) {
    ProcessResult r = w->wait(60);
    ASSERT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (int rank = 0; rank < size; ++rank)
      if (r.output.find("worker " + std::to_string(rank) + " of " + std::to_string(size) +
                        ": 3 rounds of 32 tensors, all sums exact") != std::string::npos)
        ranks.insert(rank);
    joined_job += count_of(r.output, "joined the job as");
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(size));
  EXPECT_EQ(joined_job, s.machines) << "only local rank 0 of each machine joins the job";
  job.expect_clean_exit(30);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

INSTANTIATE_TEST_SUITE_P(Machines, LocalSumTest,
                         ::testing::Values(LocalShape{2, 2, 1}, LocalShape{2, 2, 2}),
                         [](const auto& p) {
                           return std::to_string(p.param.machines) + "x" +
                                  std::to_string(p.param.local_size) + "w" +
                                  std::to_string(p.param.servers) + "s";
                         });

// A broadcast from any rank of any machine: the root's local rank 0 takes
// its bytes from the root's slot, the machines relay them through the
// servers, and every local rank ends with the root's bytes.
TEST(LocalBroadcast, EveryLocalRankOfEveryMachineGetsTheRootsBytes) {
  ServerSide job(2, 1);
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int m = 0; m < 2; ++m) {
    for (int l = 0; l < 2; ++l) {
      Env env = job.worker_env(m, 2, 1, l, 2);
      env.push_back({"BYTEPS_PARTITION_BYTES", "65536"});
      workers.push_back(std::make_unique<RunningProcess>(
          worker_spec(BROADCAST_WORKER_BIN, {"4", "200000"}, env)));
    }
  }
  for (size_t i = 0; i < workers.size(); ++i)
    expect_success_saying(workers[i]->wait(60), {"worker " + std::to_string(i) +
                                                 " of 4: 4 rounds of 40 broadcasts, every byte "
                                                 "the root's"});
  job.expect_clean_exit(30);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

// Machines of several worker processes reduce-scatter as a push_pull of the
// whole tensor, allgather as a broadcast of each shard and all-to-all as a
// broadcast of each worker's tensor (caravan.h): the same results, every
// shard's and block's bytes exact.
TEST(LocalSharded, EveryLocalRankGetsItsShardSummedAndEveryShardGathered) {
  ServerSide job(2, 1);
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int m = 0; m < 2; ++m) {
    for (int l = 0; l < 2; ++l) {
      Env env = job.worker_env(m, 2, 1, l, 2);
      env.push_back({"BYTEPS_PARTITION_BYTES", "65536"});
      workers.push_back(
          std::make_unique<RunningProcess>(worker_spec(SHARDED_WORKER_BIN, {"2", "200000"}, env)));
    }
  }
  for (size_t i = 0; i < workers.size(); ++i)
    expect_success_saying(workers[i]->wait(90),
                          {"worker " + std::to_string(i) + " of 4: 2 rounds of " +
                           "32 reduce_scatters, allgathers and alltoalls, every value right"});
  job.expect_clean_exit(30);
}

// The three local ranks of the one machine of a job with no scheduler,
// server or DMLC_PS_ROOT_* at all, each running sum_check_worker `args`.
std::vector<std::unique_ptr<RunningProcess>> start_serverless_machine(
    const std::vector<std::string>& args) {
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int l = 0; l < 3; ++l) {
    Env env = {{"DMLC_NUM_WORKER", "1"},
               {"BYTEPS_LOCAL_SIZE", "3"},
               {"BYTEPS_LOCAL_RANK", std::to_string(l)},
               {"BYTEPS_LOG_LEVEL", "info"}};
    workers.push_back(
        std::make_unique<RunningProcess>(worker_spec(SUM_CHECK_WORKER_BIN, args, env)));
  }
  return workers;
}

// DMLC_NUM_WORKER=1 with three local workers: a local sum only.
TEST(LocalSum, OneMachineNeedsNoSchedulerOrServer) {
  auto workers = start_serverless_machine({"3", "50000"});
  for (int l = 0; l < 3; ++l)
    expect_success_saying(
        workers[static_cast<size_t>(l)]->wait(60),
        {"worker " + std::to_string(l) + " of 3: 3 rounds of 32 tensors, all sums exact",
         "push_pull is a sum over this machine's processes through shared memory; no scheduler "
         "or server"});
  EXPECT_TRUE(shm_names(serverless_prefix()).empty()) << joined(shm_names(serverless_prefix()));
}

// Two local-only jobs of one user, told apart by DMLC_PS_ROOT_PORT alone
// (no DMLC_PS_ROOT_URI), run side by side: neither takes the other's local
// ranks nor sums the other's tensors. Before, the port was ignored without
// a URI: the second job's rank 0 found its place taken and the jobs failed,
// or, ranks interleaved, they silently summed each other's tensors.
TEST(LocalSum, TwoJobsApartByRootPortAlone) {
  int ports[2] = {free_port(), free_port()};
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int l = 0; l < 2; ++l)
    for (int port : ports) {
      Env env = {{"DMLC_NUM_WORKER", "1"},
                 {"DMLC_PS_ROOT_PORT", std::to_string(port)},
                 {"BYTEPS_LOCAL_SIZE", "2"},
                 {"BYTEPS_LOCAL_RANK", std::to_string(l)}};
      workers.push_back(
          std::make_unique<RunningProcess>(worker_spec(SUM_CHECK_WORKER_BIN, {"3", "50000"}, env)));
    }
  for (auto& w : workers)
    expect_success_saying(w->wait(60), {"of 2: 3 rounds of 32 tensors, all sums exact"});
  for (int port : ports) {
    std::string prefix = serverless_prefix() + std::to_string(port) + "-";
    EXPECT_TRUE(shm_names(prefix).empty()) << joined(shm_names(prefix));
  }
}

// Three local ranks and no servers: the root's bytes go through shared
// memory only; one worker alone: its data stays as it is.
TEST(LocalBroadcast, OneMachineAndOneWorkerNeedNoServer) {
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int l = 0; l < 3; ++l) {
    Env env = {{"DMLC_NUM_WORKER", "1"},
               {"BYTEPS_LOCAL_SIZE", "3"},
               {"BYTEPS_LOCAL_RANK", std::to_string(l)}};
    workers.push_back(
        std::make_unique<RunningProcess>(worker_spec(BROADCAST_WORKER_BIN, {"3", "200000"}, env)));
  }
  for (int l = 0; l < 3; ++l)
    expect_success_saying(workers[static_cast<size_t>(l)]->wait(60),
                          {"worker " + std::to_string(l) +
                           " of 3: 3 rounds of 40 broadcasts, every byte the root's"});
  EXPECT_TRUE(shm_names(serverless_prefix()).empty()) << joined(shm_names(serverless_prefix()));
  expect_success_saying(
      run_process(worker_spec(BROADCAST_WORKER_BIN, {"2", "1000"}, {{"DMLC_NUM_WORKER", "1"}})),
      {"worker 0 of 1: 2 rounds of 40 broadcasts, every byte the root's"});
  expect_success_saying(
      run_process(worker_spec(BROADCAST_WORKER_BIN, {"misuse"}, {{"DMLC_NUM_WORKER", "1"}})),
      {"worker 0 of 1: 0 failures", "from rank 1: the job has 1 workers, ranks 0 to 0",
       "was first used for push_pull, now for broadcast"});
}

// The API's errors (BUSY, MISMATCH across local ranks, handles) as in a job.
TEST(LocalSum, ApiBehavesAsInAJob) {
  NamedJob job;
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int l = 0; l < 2; ++l)
    workers.push_back(std::make_unique<RunningProcess>(
        worker_spec(API_MISUSE_WORKER_BIN, {}, job.env("2", std::to_string(l)))));
  for (auto& w : workers)
    expect_success_saying(
        w->wait(60), {"0 failures", "push_pull tensor 'mismatch' with different sizes or dtypes"});
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

// ---- (c) a local rank dies or hangs ----------------------------------------

constexpr int kHeartbeatTimeout = 3;
constexpr double kDeadline = kHeartbeatTimeout + 5;

// Two machines of two local workers, one server, running until stopped.
TEST(LocalFailure, KilledLocalRankIsNamedByTheOthers) {
  Env heartbeat = {{"PS_HEARTBEAT_INTERVAL", "1"},
                   {"PS_HEARTBEAT_TIMEOUT", std::to_string(kHeartbeatTimeout)}};
  ServerSide job(2, 1, heartbeat);
  std::vector<std::unique_ptr<RunningProcess>> workers;  // machine * 2 + local rank
  for (int m = 0; m < 2; ++m) {
    for (int l = 0; l < 2; ++l) {
      Env env = job.worker_env(m, 2, 1, l, 2);
      env.insert(env.end(), heartbeat.begin(), heartbeat.end());
      env.push_back({"BYTEPS_LOG_LEVEL", "info"});
      workers.push_back(std::make_unique<RunningProcess>(
          worker_spec(SUM_CHECK_WORKER_BIN, {"100000", "10000"}, env)));
    }
  }
  for (auto& w : workers) ASSERT_TRUE(w->wait_for_output("local group of 2 on machine", 30));
  RunningProcess* victim = workers[1].get();  // local rank 1 of machine 0
  victim->signal(SIGKILL);
  for (auto& w : workers) {
    if (w.get() == victim) continue;
    ProcessResult r = w->wait(kDeadline);
    EXPECT_FALSE(r.timed_out) << "still running " << kDeadline << " s after the kill:\n"
                              << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
  }
  const std::string& survivor = workers[0]->output();
  EXPECT_NE(survivor.find("local rank 1 of machine 0 (pid " + std::to_string(victim->pid()) +
                          ") ended without caravan_shutdown(): it crashed or was killed"),
            std::string::npos)
      << survivor;
  // The other machine hears it from the scheduler, naming the member that
  // died, not local rank 0 (which the scheduler saw leave).
  const std::string& elsewhere = workers[2]->output();
  EXPECT_NE(elsewhere.find("ended the job: local rank 1 of machine 0 (pid " +
                           std::to_string(victim->pid()) + ") ended without caravan_shutdown()"),
            std::string::npos)
      << elsewhere;
  for (auto* p : job.all()) {
    ProcessResult r = p->wait(kDeadline);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
  }
  victim->wait(1);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

// Local rank 0 is the one that sums: its death must not hang the others.
TEST(LocalFailure, KilledLocalRankZeroIsNamedByTheOthers) {
  auto workers = start_serverless_machine({"100000", "10000"});  // runs until stopped
  for (auto& w : workers) ASSERT_TRUE(w->wait_for_output("local group of 3 on machine", 30));
  workers[0]->signal(SIGKILL);
  for (int l = 1; l < 3; ++l)
    expect_failure_saying(workers[static_cast<size_t>(l)]->wait(5),
                          {"local rank 0 of machine", "ended without caravan_shutdown()"});
  workers[0]->wait(1);
  EXPECT_TRUE(shm_names(serverless_prefix()).empty()) << joined(shm_names(serverless_prefix()));
}

// A local rank that hangs (SIGSTOP) is named when CARAVAN_OP_TIMEOUT passes.
TEST(LocalFailure, StoppedLocalRankIsNamedAtTheDeadline) {
  NamedJob job;
  std::vector<std::unique_ptr<RunningProcess>> workers;
  for (int l = 0; l < 2; ++l) {
    Env env = job.env("2", std::to_string(l));
    env.push_back({"CARAVAN_OP_TIMEOUT", "2"});
    env.push_back({"BYTEPS_LOG_LEVEL", "info"});
    workers.push_back(std::make_unique<RunningProcess>(
        worker_spec(SUM_CHECK_WORKER_BIN, {"100000", "10000"}, env)));
  }
  for (auto& w : workers) ASSERT_TRUE(w->wait_for_output("local group of 2 on machine", 30));
  workers[1]->signal(SIGSTOP);
  ProcessResult r = workers[0]->wait(2 + 5);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("local rank 1 of machine 0 did not arrive at tensor '"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("within 2 s (CARAVAN_OP_TIMEOUT)"), std::string::npos) << r.output;
  workers[1]->signal(SIGKILL);
  workers[1]->wait(1);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

// Two machines: local rank 1 of machine 0 hangs, so local rank 0 fails at
// its CARAVAN_OP_TIMEOUT and exits without caravan_shutdown(). The hung
// process never exits, so no watcher ever sees a death: the other machine
// must hear the cause from local rank 0 as it goes (it heard "lost worker 0
// ... exited or crashed before shutdown").
TEST(LocalFailure, StoppedLocalRankIsNamedToTheOtherMachines) {
  ServerSide job(2, 1);
  std::vector<std::unique_ptr<RunningProcess>> workers;  // machine * 2 + local rank
  for (int m = 0; m < 2; ++m) {
    for (int l = 0; l < 2; ++l) {
      Env env = job.worker_env(m, 2, 1, l, 2);
      // Machine 1 keeps the default, so it learns of the failure from the
      // job, not from a timeout of its own.
      if (m == 0) env.push_back({"CARAVAN_OP_TIMEOUT", "2"});
      env.push_back({"BYTEPS_LOG_LEVEL", "info"});
      workers.push_back(std::make_unique<RunningProcess>(
          worker_spec(SUM_CHECK_WORKER_BIN, {"100000", "10000"}, env)));
    }
  }
  for (auto& w : workers) ASSERT_TRUE(w->wait_for_output("local group of 2 on machine", 30));
  workers[1]->signal(SIGSTOP);
  ProcessResult root = workers[0]->wait(2 + 10);
  EXPECT_FALSE(root.timed_out) << root.output;
  EXPECT_GT(root.exit_code, 0) << root.output;
  for (size_t i : {size_t{2}, size_t{3}}) {
    ProcessResult r = workers[i]->wait(10);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("ended the job: local rank 0 of machine 0 (pid " +
                            std::to_string(workers[0]->pid()) +
                            ") stopped without caravan_shutdown() after: local rank 1 of machine "
                            "0 did not arrive at tensor '"),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("within 2 s (CARAVAN_OP_TIMEOUT)"), std::string::npos) << r.output;
  }
  for (auto* p : job.all()) {
    ProcessResult r = p->wait(10);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
  }
  workers[1]->signal(SIGKILL);
  workers[1]->wait(1);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

// ---- (d) the environment is wrong ------------------------------------------

struct BadLocal {
  const char* label;
  Env env;
  const char* message;
};

class BadLocalEnvironment : public ::testing::TestWithParam<BadLocal> {};

TEST_P(BadLocalEnvironment, IsNamedWithItsValue) {
  Env env = GetParam().env;
  env.push_back({"DMLC_NUM_WORKER", "1"});
  ProcessSpec spec = worker_spec(SUM_CHECK_WORKER_BIN, {"1", "10"}, env);
  spec.timeout_s = 10;
  expect_failure_saying(run_process(spec), {GetParam().message});
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadLocalEnvironment,
    ::testing::Values(
        BadLocal{"RankNotBelowSize",
                 {{"BYTEPS_LOCAL_SIZE", "2"}, {"BYTEPS_LOCAL_RANK", "2"}},
                 "BYTEPS_LOCAL_RANK=2 must be less than BYTEPS_LOCAL_SIZE=2"},
        BadLocal{"RankWithoutSize",
                 {{"BYTEPS_LOCAL_RANK", "1"}},
                 "BYTEPS_LOCAL_RANK=1 must be less than BYTEPS_LOCAL_SIZE (unset, so 1)"},
        BadLocal{"NegativeRank",
                 {{"BYTEPS_LOCAL_SIZE", "2"}, {"BYTEPS_LOCAL_RANK", "-1"}},
                 "BYTEPS_LOCAL_RANK='-1' is out of range"},
        BadLocal{"ZeroSize", {{"BYTEPS_LOCAL_SIZE", "0"}}, "BYTEPS_LOCAL_SIZE='0' is out of range"},
        BadLocal{"SizeNotANumber",
                 {{"BYTEPS_LOCAL_SIZE", "two"}},
                 "BYTEPS_LOCAL_SIZE='two' is not an integer"},
        BadLocal{"ForceNotABoolean",
                 {{"BYTEPS_FORCE_DISTRIBUTED", "yes"}},
                 "BYTEPS_FORCE_DISTRIBUTED='yes' is not 0 or 1"}),
    [](const auto& p) { return std::string(p.param.label); });

// Two processes of one machine that disagree: both must fail at once, each
// saying every one of `needles`, and leave nothing in /dev/shm.
void expect_both_refused(const NamedJob& job, Env first, Env second,
                         const std::vector<std::string>& needles) {
  first.push_back({"CARAVAN_CONNECT_TIMEOUT", "10"});
  second.push_back({"CARAVAN_CONNECT_TIMEOUT", "10"});
  RunningProcess a(worker_spec(SUM_CHECK_WORKER_BIN, {"1", "10"}, first));
  RunningProcess b(worker_spec(SUM_CHECK_WORKER_BIN, {"1", "10"}, second));
  for (RunningProcess* p : {&a, &b}) expect_failure_saying(p->wait(10), needles);
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

TEST(BadLocalGroup, SameLocalRankTwice) {
  NamedJob job;
  expect_both_refused(job, job.env("2", "0"), job.env("2", "0"),
                      {"BYTEPS_LOCAL_RANK=0 is already taken on machine 0 by pid"});
}

// Whichever starts first makes the group; both hear the disagreement.
TEST(BadLocalGroup, DifferentLocalSizes) {
  NamedJob job;
  expect_both_refused(
      job, job.env("2", "0"), job.env("3", "1"),
      {" here, but the other processes of machine 0 (", ") run with BYTEPS_LOCAL_SIZE="});
}

TEST(BadLocalGroup, MissingLocalRanksAreNamedAtTheConnectDeadline) {
  NamedJob job;
  Env env = job.env("3", "1");
  env.push_back({"CARAVAN_CONNECT_TIMEOUT", "2"});
  ProcessSpec spec = worker_spec(SUM_CHECK_WORKER_BIN, {"1", "10"}, env);
  spec.timeout_s = 10;
  expect_failure_saying(
      run_process(spec),
      {"local ranks 0, 2 of machine 0 did not arrive within 2 s (CARAVAN_CONNECT_TIMEOUT)"});
  EXPECT_TRUE(shm_names(job.segment_prefix()).empty()) << joined(shm_names(job.segment_prefix()));
}

}  // namespace
}  // namespace caravan::test
