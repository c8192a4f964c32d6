// The BytePS data path in whole jobs: worker send order under
// BYTEPS_SCHEDULING_CREDIT, partition pipelining, server summation threads and
// scheduling, PS_RESEND, and BYTEPS_DEBUG_SAMPLE_TENSOR traces.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

ProcessResult launch(int workers, int servers, std::vector<std::string> worker_argv,
                     std::vector<std::pair<std::string, std::string>> env) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN,      "--workers", std::to_string(workers), "--servers",
               std::to_string(servers), "--"};
  spec.argv.insert(spec.argv.end(), worker_argv.begin(), worker_argv.end());
  spec.set_env = std::move(env);
  spec.timeout_s = 180;
  return run_process(spec);
}

// "low#0 high#0 ...": the partitions in the order the worker sent them, from
// its PS_VERBOSE=2 log, leaving out the warm-up tensor.
std::string send_order(const std::string& log) {
  std::regex line("push_pull: send '([a-z]+)' partition ([0-9]+)/");
  std::string order;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    if ((*it)[1] == "warm") continue;
    order += (order.empty() ? "" : " ") + (*it)[1].str() + "#" + (*it)[2].str();
  }
  return order;
}

// One worker and one server. The server is stopped while the worker submits
// "low" (three 64 MiB partitions, priority 0) and then "high" (one
// partition, priority 10): the first low partition cannot leave, so the
// order of the rest is the policy's alone.
std::string order_with_credit(const std::string& credit) {
  int port = free_port();
  std::string fifo = "/tmp/caravan-priority-" + std::to_string(getpid()) + "-" + credit;
  unlink(fifo.c_str());
  EXPECT_EQ(mkfifo(fifo.c_str(), 0600), 0) << fifo;
  auto spec = [&](const std::string& role, std::vector<std::string> argv) {
    ProcessSpec s;
    s.argv = std::move(argv);
    s.set_env = node_env(role, port, 1, 1);
    s.set_env.push_back({"PS_VERBOSE", "2"});
    s.set_env.push_back({"BYTEPS_SCHEDULING_CREDIT", credit});
    s.set_env.push_back({"BYTEPS_PARTITION_BYTES", "67108864"});
    s.set_env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});
    s.timeout_s = 120;
    return s;
  };
  RunningProcess scheduler(spec("scheduler", {CARAVAN_SERVER_BIN}));
  RunningProcess server(spec("server", {CARAVAN_SERVER_BIN}));
  RunningProcess worker(spec("worker", {PRIORITY_WORKER_BIN, fifo}));
  std::string order;
  if (!worker.wait_for_output("warm\n", 60)) {
    ADD_FAILURE() << "the worker never warmed up:\n" << worker.output();
  } else {
    server.signal(SIGSTOP);
    // The worker holds the FIFO open for reading; O_NONBLOCK fails rather
    // than blocks if it has gone.
    int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    EXPECT_GE(fd, 0) << "the worker is not reading " << fifo;
    if (fd >= 0) {
      EXPECT_EQ(write(fd, "go\n", 3), 3);
      close(fd);
    }
    bool submitted = worker.wait_for_output("submitted\n", 60);
    server.signal(SIGCONT);
    EXPECT_TRUE(submitted) << worker.output();
    ProcessResult r = worker.wait(60);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    order = send_order(r.output);
  }
  for (RunningProcess* p : {&server, &scheduler}) {
    ProcessResult r = p->wait(30);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  unlink(fifo.c_str());
  return order;
}

TEST(SchedulingCredit, LateHighPriorityTensorOvertakesQueuedPartitions) {
  EXPECT_EQ(order_with_credit("1"), "low#0 high#0 low#1 low#2");
}

TEST(SchedulingCredit, WithoutCreditPartitionsLeaveInSubmissionOrder) {
  EXPECT_EQ(order_with_credit("0"), "low#0 low#1 low#2 high#0");
}

// BYTEPS_PARTITION_BYTES pipelines: the sum of a 64 MiB tensor's first
// partition is back before its last partition has left the worker.
TEST(Partitioning, PullsOfEarlyPartitionsOverlapPushesOfLaterOnes) {
  ProcessResult r = launch(1, 1, {SUM_CHECK_WORKER_BIN, "1"},
                           {{"BYTEPS_PARTITION_BYTES", "1048576"}, {"PS_VERBOSE", "2"}});
  ASSERT_FALSE(r.timed_out) << r.output.substr(0, 4000);
  ASSERT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  // t0_s3: 64 MiB of float32, or CARAVAN_TEST_MAX_TENSOR_BYTES if that is
  // less (sum_check_worker); still many 1 MiB partitions.
  size_t bytes = size_t{64} << 20;
  if (const char* cap = std::getenv("CARAVAN_TEST_MAX_TENSOR_BYTES"))
    bytes = std::min<size_t>(bytes, std::stoull(cap));
  std::smatch m;
  std::regex line(
      "'t0_s3' done: ([0-9]+) partitions, first sum back after ([0-9]+) us, "
      "last partition sent after ([0-9]+) us");
  ASSERT_TRUE(std::regex_search(r.output, m, line)) << "no pipelining line for t0_s3";
  EXPECT_EQ(m[1].str(), std::to_string((bytes + (1 << 20) - 1) >> 20));
  EXPECT_LT(std::stoll(m[2].str()), std::stoll(m[3].str())) << m[0];
}

// Exact sums of every dtype and size however the servers and workers are
// configured; sum_check_worker gives each dtype its own priority.
class ServerSettings
    : public ::testing::TestWithParam<std::vector<std::pair<std::string, std::string>>> {};

TEST_P(ServerSettings, SumsStayExact) {
  ProcessResult r = launch(2, 2, {SUM_CHECK_WORKER_BIN, "2", "300000"}, GetParam());
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "all sums exact"), 2) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    DataPath, ServerSettings,
    ::testing::Values(
        std::vector<std::pair<std::string, std::string>>{{"BYTEPS_SERVER_ENGINE_THREAD", "1"}},
        std::vector<std::pair<std::string, std::string>>{{"BYTEPS_SERVER_ENGINE_THREAD", "3"},
                                                         {"BYTEPS_SERVER_ENABLE_SCHEDULE", "1"},
                                                         {"BYTEPS_PARTITION_BYTES", "65536"}},
        std::vector<std::pair<std::string, std::string>>{{"BYTEPS_SCHEDULING_CREDIT", "1"}},
        std::vector<std::pair<std::string, std::string>>{{"BYTEPS_SCHEDULING_CREDIT", "4"},
                                                         {"BYTEPS_PARTITION_BYTES", "65536"}}),
    [](const auto& param_info) {
      std::string name;
      for (auto& [k, v] : param_info.param) name += k.substr(7) + v;
      for (char& c : name)
        if (c == '_') c = 'x';
      return name;
    });

// PS_RESEND: 5% of received messages (pushes, sums and acknowledgements)
// dropped, every sum still exact; without resend the same loss is a named
// timeout, not a hang.
TEST(Resend, FivePercentDroppedAndEverySumStaysExact) {
  ProcessResult r = launch(2, 2, {SUM_CHECK_WORKER_BIN, "3", "300000"},
                           {{"PS_RESEND", "1"},
                            {"PS_RESEND_TIMEOUT", "200"},
                            {"PS_DROP_MSG", "5"},
                            {"PS_VERBOSE", "1"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "all sums exact"), 2) << r.output;
  EXPECT_GT(count_of(r.output, "resending message"), 0) << "nothing was dropped:\n" << r.output;
}

TEST(Resend, WithoutResendALostMessageIsANamedTimeout) {
  ProcessResult r = launch(2, 2, {SUM_CHECK_WORKER_BIN, "3", "300000"},
                           {{"PS_DROP_MSG", "5"}, {"CARAVAN_OP_TIMEOUT", "5"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("timed out after 5 s (CARAVAN_OP_TIMEOUT) waiting for server"),
            std::string::npos)
      << r.output;
}

// Asynchronous mode (BYTEPS_ENABLE_ASYNC) with known deltas: IpcJob.AsyncMode*
// in ipc_test.cc, through the van and through shared memory.

TEST(DebugSampleTensor, ValuesAreLoggedAtEveryStage) {
  // t0_s1 is 1024 float32 values; sum_check_worker's round 0 gives worker 0
  // first 0 / last 11 and worker 1 first 13 / last 24 (sums 13 and 35).
  ProcessResult r =
      launch(2, 1, {SUM_CHECK_WORKER_BIN, "1", "300000"},
             {{"BYTEPS_DEBUG_SAMPLE_TENSOR", "t0_s1"}, {"BYTEPS_LOG_LEVEL", "warning"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const char* want[] = {
      "sample 't0_s1' partition 0 push: 1024 float32 values: first 0, last 11",
      "sample 't0_s1' partition 0 push: 1024 float32 values: first 13, last 24",
      "receive from worker 0: 1024 float32 values: first 0, last 11",
      "receive from worker 1: 1024 float32 values: first 13, last 24",
      "sum of round 1: 1024 float32 values: first 13, last 35",
  };
  for (const char* w : want) EXPECT_EQ(count_of(r.output, w), 1) << w << "\n" << r.output;
  EXPECT_EQ(
      count_of(r.output, "sample 't0_s1' partition 0 pull: 1024 float32 values: first 13, last 35"),
      2)
      << r.output;
  EXPECT_EQ(count_of(r.output, "sample 't1_"), 0) << "only the named tensor is traced";
}

}  // namespace
}  // namespace caravan::test
