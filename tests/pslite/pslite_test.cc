// Runs the ps-lite programs in every role under caravan-launch --spmd, with
// 1 to 4 servers and workers.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

struct Program {
  const char* name;
  const char* path;
  const char* success;  // printed once per checking node
  bool every_role;      // printed by every node, not just workers
  int per_worker;       // lines per worker (customers)
};

const Program kPrograms[] = {
    {"DefaultHandle", PSLITE_KV_DEFAULT_HANDLE_BIN, "push, pull and push_pull sums exact", false,
     1},
    {"CustomHandle", PSLITE_KV_CUSTOM_HANDLE_BIN,
     "lens, zero-copy calls, command and callbacks correct", false, 1},
    {"SimpleAppGroups", PSLITE_SIMPLE_APP_GROUPS_BIN,
     "SimpleApp requests to every group answered exactly once", true, 1},
    {"TwoCustomers", PSLITE_TWO_CUSTOMERS_BIN, "sums came back to the right customer", false, 2},
};

using Param = std::tuple<int, int, int>;  // program, workers, servers

class PsLiteJob : public ::testing::TestWithParam<Param> {};

void run_program(const Program& p, int workers, int servers,
                 std::vector<std::pair<std::string, std::string>> env) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN,      "--spmd", "--workers", std::to_string(workers), "--servers",
               std::to_string(servers), "--",     p.path};
  spec.set_env = std::move(env);
  spec.timeout_s = 120;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  int expected = p.every_role ? 1 + servers + workers : workers * p.per_worker;
  EXPECT_EQ(count_of(r.output, p.success), expected) << r.output;
}

TEST_P(PsLiteJob, RunsUnchangedInEveryRole) {
  run_program(kPrograms[std::get<0>(GetParam())], std::get<1>(GetParam()), std::get<2>(GetParam()),
              {});
}

// PS_RESEND as in ps-lite: with 5% of received messages dropped (requests,
// responses and acknowledgements alike), every program still completes.
TEST(PsLiteResend, EveryProgramSurvivesFivePercentDropped) {
  for (const Program& p : kPrograms) {
    SCOPED_TRACE(p.name);
    run_program(p, 2, 2, {{"PS_RESEND", "1"}, {"PS_RESEND_TIMEOUT", "100"}, {"PS_DROP_MSG", "5"}});
  }
}

// A job started by hand, as ps-lite's scripts and bytedance/ps-lite's
// README do: one scheduler and the given processes, each with its role,
// the job's size and its own variables.
struct HandNode {
  std::string role;
  std::vector<std::pair<std::string, std::string>> env;
};

std::vector<ProcessResult> start_by_hand(
    const std::string& program, const std::vector<std::string>& args, int num_workers,
    int num_servers, std::vector<HandNode>& nodes,
    const std::vector<std::pair<std::string, std::string>>& common) {
  int port = free_port();
  nodes.insert(nodes.begin(), HandNode{"scheduler", {}});
  std::vector<std::unique_ptr<RunningProcess>> running;
  for (const HandNode& n : nodes) {
    ProcessSpec spec;
    spec.argv = {program};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.set_env = node_env(n.role, port, num_workers, num_servers);
    spec.set_env.insert(spec.set_env.end(), common.begin(), common.end());
    spec.set_env.insert(spec.set_env.end(), n.env.begin(), n.env.end());
    spec.timeout_s = 90;
    running.push_back(std::make_unique<RunningProcess>(spec));
  }
  std::vector<ProcessResult> results;
  for (auto& r : running) results.push_back(r->wait(90));
  return results;
}

// Every process of a job run by hand ended by its deadline, with exit code
// 0 (`succeeded`) or not. Returns all their output.
std::string expect_every_process(bool succeeded, const std::vector<ProcessResult>& results,
                                 const std::vector<HandNode>& nodes) {
  std::string all;
  for (size_t i = 0; i < results.size(); ++i) {
    const ProcessResult& r = results[i];
    all += r.output;
    EXPECT_FALSE(r.timed_out) << nodes[i].role << " " << i << " hung:\n" << r.output;
    EXPECT_EQ(r.exit_code == 0, succeeded)
        << nodes[i].role << " " << i << " exit code " << r.exit_code << ":\n"
        << r.output;
  }
  return all;
}

// Runs the job and expects every process to succeed; returns all output.
std::string run_by_hand(const std::string& program, const std::vector<std::string>& args,
                        int num_workers, int num_servers, std::vector<HandNode> nodes,
                        const std::vector<std::pair<std::string, std::string>>& common = {}) {
  auto results = start_by_hand(program, args, num_workers, num_servers, nodes, common);
  return expect_every_process(true, results, nodes);
}

// A job that must fail: every process ended by its deadline, non-zero.
// Returns all their output.
std::string expect_every_process_failed(const std::vector<ProcessResult>& results,
                                        const std::vector<HandNode>& nodes) {
  return expect_every_process(false, results, nodes);
}

// dmlc/ps-lite's multi-worker form: each Start(customer_id) of a worker
// process is a worker of the job (2 processes x 3 customers = 6 workers),
// and customer 0's Finalize waits for the customers still working.
TEST(PsLiteCustomers, EachStartCountsAsAWorker) {
  std::string out = run_by_hand(PSLITE_CUSTOMERS_AS_WORKERS_BIN, {"3"}, 6, 2,
                                {{"server", {}}, {"server", {}}, {"worker", {}}, {"worker", {}}});
  EXPECT_EQ(count_of(out, "sums exact"), 6) << out;
}

// A worker process dies in the middle (one customer aborts): every other
// process ends at once, non-zero, and the job's log names the lost worker.
TEST(PsLiteCustomers, AWorkerThatDiesEndsTheJobEverywhere) {
  std::vector<HandNode> nodes = {{"server", {}}, {"server", {}}, {"worker", {}}, {"worker", {}}};
  auto results = start_by_hand(PSLITE_CUSTOMERS_AS_WORKERS_BIN, {"2", "die"}, 4, 2, nodes, {});
  std::string all = expect_every_process_failed(results, nodes);
  EXPECT_NE(all.find("lost worker"), std::string::npos) << all;
}

// The servers never make their KVServer (as bytedance/ps-lite's
// test_benchmark without DMLC_GROUP_SIZE): within CARAVAN_OP_TIMEOUT the
// servers end naming the application object that never came, and so does
// the whole job, instead of the workers waiting forever.
TEST(PsLiteCustomers, AServerWithoutItsApplicationEndsTheJob) {
  std::vector<HandNode> nodes = {{"server", {}}, {"worker", {}}};
  auto results = start_by_hand(PSLITE_CUSTOMERS_AS_WORKERS_BIN, {"1", "noserver"}, 1, 1, nodes,
                               {{"CARAVAN_OP_TIMEOUT", "3"}});
  std::string all = expect_every_process_failed(results, nodes);
  EXPECT_NE(all.find("messages for app 0, customer 0 came from node 9 but this server node has no "
                     "such customer: the program never made its KVServer"),
            std::string::npos)
      << all;
}

// bytedance/ps-lite's API with two instances per process: 2 worker and 2
// server processes, each with DMLC_GROUP_SIZE=2 nodes, receive buffers
// registered per worker rank.
TEST(PsLiteInstanceGroups, WorkersAndServersWithTwoInstancesEach) {
  std::vector<HandNode> nodes;
  for (const char* role : {"server", "worker"})
    for (int rank = 0; rank < 2; ++rank)
      nodes.push_back({role, {{"DMLC_RANK", std::to_string(rank)}}});
  std::string out = run_by_hand(PSLITE_INSTANCE_GROUPS_BIN, {}, 2, 2, nodes,
                                {{"DMLC_GROUP_SIZE", "2"}, {"ENABLE_RECV_BUFFER", "1"}});
  EXPECT_EQ(count_of(out, "sums exact"), 4) << out;
}

// JOINT processes (a worker and a server each, as BytePS colocates them)
// on one host with BYTEPS_ENABLE_IPC: values travel through shared memory.
TEST(PsLiteInstanceGroups, JointProcessesThroughSharedMemory) {
  std::vector<HandNode> nodes;
  for (int rank = 0; rank < 2; ++rank)
    nodes.push_back({"joint", {{"DMLC_RANK", std::to_string(rank)}}});
  std::string out = run_by_hand(PSLITE_INSTANCE_GROUPS_BIN, {}, 2, 2, nodes,
                                {{"BYTEPS_ENABLE_IPC", "1"}, {"BYTEPS_LOG_LEVEL", "INFO"}});
  EXPECT_EQ(count_of(out, "sums exact"), 2) << out;
  // Each worker node to each server node of the host (2 x 2).
  EXPECT_EQ(count_of(out, "go through shared memory"), 4) << out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, PsLiteJob,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Values(1, 2, 4),
                                            ::testing::Values(1, 3)),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::string(kPrograms[std::get<0>(param_info.param)].name) + "_" +
                                  std::to_string(std::get<1>(param_info.param)) + "w" +
                                  std::to_string(std::get<2>(param_info.param)) + "s";
                         });

}  // namespace
}  // namespace caravan::test
