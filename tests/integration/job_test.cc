// Whole jobs of real processes over loopback: the launcher, the scheduler,
// servers and C worker programs, checking sums and the error paths a user
// meets first.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/outcome.h"
#include "tests/support/process.h"
#include "tests/support/refusal.h"

namespace caravan::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

struct Shape {
  int workers, servers;
};

// caravan-launch running `command` as every worker of a job of `shape`.
ProcessResult launch(Shape shape, const std::vector<std::string>& command, Env env,
                     double timeout_s) {
  return run_process(launch_spec(CARAVAN_LAUNCH_BIN, shape.workers, shape.servers, command,
                                 std::move(env), timeout_s));
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return std::to_string(info.param.workers) + "w" + std::to_string(info.param.servers) + "s";
}

class SumJobTest : public ::testing::TestWithParam<Shape> {};

TEST_P(SumJobTest, EveryDtypeAndSizeSumsExactly) {
  ProcessResult r = launch(GetParam(), {SUM_CHECK_WORKER_BIN, "2"}, {}, 240);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "all sums exact"), GetParam().workers) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SumJobTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 2}, Shape{4, 2}),
                         shape_name);

class BroadcastJobTest : public ::testing::TestWithParam<Shape> {};

// Every worker ends with the root's exact bytes, from a root that changes
// with each round and tensor, tensors cut into partitions over every server.
TEST_P(BroadcastJobTest, EveryWorkerGetsTheRootsBytes) {
  ProcessResult r =
      launch(GetParam(), {BROADCAST_WORKER_BIN, "3"}, {{"BYTEPS_PARTITION_BYTES", "65536"}}, 240);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "every byte the root's"), GetParam().workers) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BroadcastJobTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 2}), shape_name);

class ShardedJobTest : public ::testing::TestWithParam<Shape> {};

// Reduce-scatter and allgather (C API 1.4) of every dtype, shards cut into
// partitions over every server: each worker's shard summed, every shard's
// bytes gathered exactly.
TEST_P(ShardedJobTest, EveryShardIsSummedAndGatheredExactly) {
  ProcessResult r =
      launch(GetParam(), {SHARDED_WORKER_BIN, "3"}, {{"BYTEPS_PARTITION_BYTES", "65536"}}, 240);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "every value right"), GetParam().workers) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ShardedJobTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 2}), shape_name);

TEST(JobTest, ShardedMisuseReturnsErrorsAndTheJobCarriesOn) {
  ProcessResult r = launch({2, 1}, {SHARDED_WORKER_BIN, "misuse"}, {}, 60);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  EXPECT_NE(r.output.find("reduce_scatter of tensor 'bad.count': 3 elements are no multiple of "
                          "the job's 2 workers"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("'summed.then.gathered' was first used for push_pull, now for allgather"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("alltoall of tensor 'a2a.overlap': send and recv overlap"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("'summed.then.gathered' was first used for push_pull, now for alltoall"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("recv is NULL for tensor 'a2a.null'"), std::string::npos) << r.output;
}

// Asynchronous training's servers relay broadcasts too (BytePS starts an
// asynchronous job by broadcasting the parameters).
TEST(JobTest, BroadcastInAsynchronousMode) {
  ProcessResult r =
      launch({2, 1}, {BROADCAST_WORKER_BIN, "2", "1000"}, {{"BYTEPS_ENABLE_ASYNC", "1"}}, 120);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "every byte the root's"), 2) << r.output;
}

TEST(JobTest, BroadcastMisuseReturnsErrorsAndTheJobCarriesOn) {
  ProcessResult r = launch({2, 1}, {BROADCAST_WORKER_BIN, "misuse"}, {}, 60);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  EXPECT_NE(r.output.find("tensor 'bad.root' from rank 2: the job has 2 workers"),
            std::string::npos)
      << r.output;
  EXPECT_NE(
      r.output.find("'summed.then.broadcast' was first used for push_pull, now for broadcast"),
      std::string::npos)
      << r.output;
}

TEST(JobTest, ApiMisuseReturnsErrorsAndTheJobCarriesOn) {
  ProcessResult r = launch({2, 2}, {API_MISUSE_WORKER_BIN}, {}, 60);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  EXPECT_NE(r.output.find("was first used with 16 float32 elements, now with 8"), std::string::npos)
      << r.output;
}

TEST(JobTest, SmallPartitionsSpreadOverServers) {
  EXPECT_TRUE(Succeeded(launch({2, 3}, {SUM_CHECK_WORKER_BIN, "1", "100000"},
                               {{"BYTEPS_PARTITION_BYTES", "4099"}}, 120)));
}

// 4 GiB + 1 elements in one partition: one message over 4 GiB, so every
// length on the way (API, wire header, van, server, reducer) is 64-bit.
TEST(JobTest, TensorOver4GiBInOneMessage) {
  ProcessResult r =
      launch({1, 1}, {LARGE_TENSOR_WORKER_BIN}, {{"BYTEPS_PARTITION_BYTES", "8589934592"}}, 240);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_NE(r.output.find("4294967297-element uint8 tensor summed exactly"), std::string::npos)
      << r.output;
}

// --- The environment is wrong: a clear message and an exit within 10 s. ---

// `bin` started as one `role` node of a job of `workers` and `servers`
// whose scheduler is at `port`, without a launcher, with `extra` after the
// job's environment; it has 10 s to refuse.
ProcessSpec node_spec(const std::string& bin, const std::string& role, int port, int workers,
                      int servers, const Env& extra = {}) {
  ProcessSpec spec;
  spec.argv = {bin};
  spec.set_env = node_env(role, port, workers, servers);
  spec.set_env.insert(spec.set_env.end(), extra.begin(), extra.end());
  spec.timeout_s = 10;
  return spec;
}

TEST(BadEnvironment, MalformedWorkerCountIsNamed) {
  ExpectRefusal(
      node_spec(CARAVAN_SERVER_BIN, "server", free_port(), 1, 1, {{"DMLC_NUM_WORKER", "abc"}}),
      {"DMLC_NUM_WORKER='abc' is not an integer"});
}

// CARAVAN_SCHEDULER_FD is caravan-launch's: set by hand, it is checked
// before the scheduler relies on it.
TEST(BadEnvironment, ASchedulerSocketThatIsNotThereIsNamed) {
  ExpectRefusal(node_spec(CARAVAN_SERVER_BIN, "scheduler", free_port(), 1, 1,
                          {{"CARAVAN_SCHEDULER_FD", "900"}}),
                {"CARAVAN_SCHEDULER_FD=900 names no open file descriptor of this process: it is "
                 "set only by caravan-launch"});
  ExpectRefusal(node_spec(CARAVAN_SERVER_BIN, "scheduler", free_port(), 1, 1,
                          {{"CARAVAN_SCHEDULER_FD", "three"}}),
                {"CARAVAN_SCHEDULER_FD='three' is not an integer"});
}

// The scheduler listens on IPv4 only: an IPv6 address is refused at once by
// every node and by caravan-launch (each node waited out
// CARAVAN_CONNECT_TIMEOUT with "Connection refused").
TEST(BadEnvironment, AnIPv6AddressIsRefusedAtOnce) {
  for (const char* var : {"DMLC_PS_ROOT_URI", "DMLC_NODE_HOST"})
    ExpectRefusal(node_spec(CARAVAN_SERVER_BIN, "scheduler", free_port(), 1, 1, {{var, "::1"}}),
                  {std::string(var) + "='::1' is an IPv6 address"});
  ProcessSpec spec = launch_spec(CARAVAN_LAUNCH_BIN, 2, 1, {SUM_CHECK_WORKER_BIN}, {}, 10);
  spec.argv.insert(spec.argv.begin() + 1, {"--host", "::1"});
  ProcessResult r = ExpectRefusal(spec, {"invalid --host value '::1': an IPv6 address"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// DMLC_PS_ROOT_PORT held by something that takes connections but is no
// scheduler: the node says so (it said that other nodes were missing).
TEST(BadEnvironment, APortThatIsNoSchedulerIsNamed) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 8), 0);  // the kernel completes connections; nobody answers
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ProcessSpec spec = node_spec(CARAVAN_SERVER_BIN, "server", ntohs(addr.sin_port), 1, 1,
                               {{"CARAVAN_CONNECT_TIMEOUT", "1"}});
  spec.timeout_s = 20;
  ExpectRefusal(spec, {"took the connection but sent nothing in 1 s (CARAVAN_CONNECT_TIMEOUT), "
                       "not even a heartbeat: is it a Caravan scheduler?"});
  close(fd);
}

// caravan-server reads only its environment; an argument (a launcher's
// option passed on) was dropped without a word.
TEST(BadEnvironment, AnArgumentToCaravanServerIsRefused) {
  ProcessSpec spec = node_spec(CARAVAN_SERVER_BIN, "server", free_port(), 1, 1);
  spec.argv.push_back("--num-servers=2");
  ProcessResult r = ExpectRefusal(
      spec, {"caravan-server: unexpected argument '--num-servers=2'", "It takes\nno arguments"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(BadEnvironment, MissingRootUriIsNamedByAWorker) {
  ProcessSpec spec;
  spec.argv = {SUM_CHECK_WORKER_BIN};
  // Two workers: a single one needs no scheduler, so no address either.
  for (auto& kv : node_env("worker", free_port(), 2, 1))
    if (kv.first != "DMLC_PS_ROOT_URI") spec.set_env.push_back(kv);
  spec.unset_env = {"DMLC_PS_ROOT_URI"};
  spec.timeout_s = 10;
  ExpectRefusal(spec, {"DMLC_PS_ROOT_URI is not set"});
}

TEST(BadEnvironment, PortOutOfRangeIsNamed) {
  ExpectRefusal(node_spec(CARAVAN_SERVER_BIN, "scheduler", 70000, 1, 1),
                {"DMLC_PS_ROOT_PORT='70000' is out of range"});
}

TEST(BadEnvironment, UnknownVanStopsTheWholeJobListingThePathsTried) {
  ProcessSpec spec = launch_spec(
      CARAVAN_LAUNCH_BIN, 2, 1, {SUM_CHECK_WORKER_BIN},
      {{"DMLC_ENABLE_RDMA", "acme"}, {"CARAVAN_PLUGIN_PATH", "/nonexistent/plugins"}}, 10);
  ExpectRefusal(spec, {"cannot load van plugin 'acme' (chosen by DMLC_ENABLE_RDMA=acme)",
                       "/nonexistent/plugins/libcaravan-van-acme.so: not found"});
}

// Hostfile lines caravan-launch refuses before anything starts, each naming
// the file, the line and the word at fault.
TEST(BadEnvironment, MalformedHostfileLinesAreNamed) {
  struct Case {
    const char* line;
    const char* says;
  };
  for (const Case& c : {Case{"h1 slots=2 slots=3", ":2: slots= is given twice on one line"},
                        Case{"h1 servers=1 servers=0", ":2: servers= is given twice on one line"},
                        Case{"h1 slots=x", ":2: slots=x is not a count from 0 to 4096"},
                        Case{"h1 gpus=2", ":2: 'gpus=2' is not slots=N or servers=M"}}) {
    std::string path = ::testing::TempDir() + "caravan_hostfile_" + std::to_string(getpid());
    std::ofstream(path) << "# hosts\n" << c.line << "\n";
    ProcessSpec spec;
    spec.argv = {CARAVAN_LAUNCH_BIN, "--hostfile", path, "--", SUM_CHECK_WORKER_BIN};
    spec.timeout_s = 10;
    ProcessResult r = ExpectRefusal(spec, {path + c.says});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    std::remove(path.c_str());
  }
}

TEST(BadEnvironment, MissingNodesAreNamedAtTheStartUpDeadline) {
  ProcessResult r = ExpectRefusal(node_spec(CARAVAN_SERVER_BIN, "scheduler", free_port(), 2, 1,
                                            {{"CARAVAN_CONNECT_TIMEOUT", "2"}}),
                                  {"missing 1 server(s) and 2 worker(s)"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
}

TEST(BadEnvironment, AWorkerWithoutAJobGivesUpAtTheDeadline) {
  ExpectRefusal(node_spec(SUM_CHECK_WORKER_BIN, "worker", free_port(), 1, 1,
                          {{"BYTEPS_FORCE_DISTRIBUTED", "1"}, {"CARAVAN_CONNECT_TIMEOUT", "2"}}),
                {"cannot reach the scheduler at 127.0.0.1:"});
}

}  // namespace
}  // namespace caravan::test
