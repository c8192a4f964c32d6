// Jobs without servers: a single worker (DMLC_NUM_WORKER=1) needs no
// scheduler or server unless BYTEPS_FORCE_DISTRIBUTED=1. Real processes,
// real sockets.
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
    EXPECT_NE(r.exit_code, 0) << r.output;
  for (const std::string& needle : needles)
    EXPECT_NE(r.output.find(needle), std::string::npos) << needle << " in:\n" << r.output;
}

void expect_success_saying(const ProcessResult& r, const std::vector<std::string>& needles) {
  expect_ended(r, true, needles);
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

}  // namespace
}  // namespace caravan::test
