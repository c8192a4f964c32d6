// Whole jobs of real processes over loopback: the launcher, the scheduler,
// servers and C worker programs, checking sums and the error paths a user
// meets first.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/process.h"
#include "tests/support/refusal.h"

namespace caravan::test {
namespace {

struct Shape {
  int workers, servers;
};

class SumJobTest : public ::testing::TestWithParam<Shape> {};

TEST_P(SumJobTest, EveryDtypeAndSizeSumsExactly) {
  Shape s = GetParam();
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", std::to_string(s.workers), "--servers",
               std::to_string(s.servers), "--", SUM_CHECK_WORKER_BIN, "2"};
  spec.timeout_s = 240;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "all sums exact"), s.workers) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SumJobTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 2}, Shape{4, 2}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.workers) + "w" +
                                  std::to_string(param_info.param.servers) + "s";
                         });

class BroadcastJobTest : public ::testing::TestWithParam<Shape> {};

// Every worker ends with the root's exact bytes, from a root that changes
// with each round and tensor, tensors cut into partitions over every server.
TEST_P(BroadcastJobTest, EveryWorkerGetsTheRootsBytes) {
  Shape s = GetParam();
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", std::to_string(s.workers), "--servers",
               std::to_string(s.servers), "--", BROADCAST_WORKER_BIN, "3"};
  spec.set_env = {{"BYTEPS_PARTITION_BYTES", "65536"}};
  spec.timeout_s = 240;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "every byte the root's"), s.workers) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BroadcastJobTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1}, Shape{3, 2}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.workers) + "w" +
                                  std::to_string(param_info.param.servers) + "s";
                         });

// Asynchronous training's servers relay broadcasts too (BytePS starts an
// asynchronous job by broadcasting the parameters).
TEST(JobTest, BroadcastInAsynchronousMode) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "2", "--servers", "1", "--",
               BROADCAST_WORKER_BIN, "2", "1000"};
  spec.set_env = {{"BYTEPS_ENABLE_ASYNC", "1"}};
  spec.timeout_s = 120;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "every byte the root's"), 2) << r.output;
}

TEST(JobTest, BroadcastMisuseReturnsErrorsAndTheJobCarriesOn) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "2", "--servers", "1", "--",
               BROADCAST_WORKER_BIN, "misuse"};
  spec.timeout_s = 60;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  EXPECT_NE(r.output.find("tensor 'bad.root' from rank 2: the job has 2 workers"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("'summed.then.broadcast' was first used for push_pull, now for broadcast"),
            std::string::npos)
      << r.output;
}

TEST(JobTest, ApiMisuseReturnsErrorsAndTheJobCarriesOn) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "2", "--servers", "2", "--", API_MISUSE_WORKER_BIN};
  spec.timeout_s = 60;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  EXPECT_NE(r.output.find("was first used with 16 float32 elements, now with 8"), std::string::npos)
      << r.output;
}

TEST(JobTest, SmallPartitionsSpreadOverServers) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "2", "--servers", "3", "--",
               SUM_CHECK_WORKER_BIN, "1", "100000"};
  spec.set_env = {{"BYTEPS_PARTITION_BYTES", "4099"}};
  spec.timeout_s = 120;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// 4 GiB + 1 elements in one partition: one message over 4 GiB, so every
// length on the way (API, wire header, van, server, reducer) is 64-bit.
TEST(JobTest, TensorOver4GiBInOneMessage) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "1", "--servers", "1", "--",
               LARGE_TENSOR_WORKER_BIN};
  spec.set_env = {{"BYTEPS_PARTITION_BYTES", "8589934592"}};
  spec.timeout_s = 240;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("4294967297-element uint8 tensor summed exactly"), std::string::npos)
      << r.output;
}

// --- The environment is wrong: a clear message and an exit within 10 s. ---

TEST(BadEnvironment, MalformedWorkerCountIsNamed) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_SERVER_BIN};
  spec.set_env = node_env("server", free_port(), 1, 1);
  spec.set_env.push_back({"DMLC_NUM_WORKER", "abc"});
  spec.timeout_s = 10;
  ExpectRefusal(spec, {"DMLC_NUM_WORKER='abc' is not an integer"});
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
  ProcessSpec spec;
  spec.argv = {CARAVAN_SERVER_BIN};
  spec.set_env = node_env("scheduler", 70000, 1, 1);
  spec.timeout_s = 10;
  ExpectRefusal(spec, {"DMLC_PS_ROOT_PORT='70000' is out of range"});
}

TEST(BadEnvironment, UnknownVanStopsTheWholeJobListingThePathsTried) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--workers", "2", "--servers", "1", "--", SUM_CHECK_WORKER_BIN};
  spec.set_env = {{"DMLC_ENABLE_RDMA", "acme"}, {"CARAVAN_PLUGIN_PATH", "/nonexistent/plugins"}};
  spec.timeout_s = 10;
  ExpectRefusal(spec, {"cannot load van plugin 'acme' (chosen by DMLC_ENABLE_RDMA=acme)",
                       "/nonexistent/plugins/libcaravan-van-acme.so: not found"});
}

TEST(BadEnvironment, MissingNodesAreNamedAtTheStartUpDeadline) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_SERVER_BIN};
  spec.set_env = node_env("scheduler", free_port(), 2, 1);
  spec.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", "2"});
  spec.timeout_s = 10;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("missing 1 server(s) and 2 worker(s)"), std::string::npos) << r.output;
}

TEST(BadEnvironment, AWorkerWithoutAJobGivesUpAtTheDeadline) {
  ProcessSpec spec;
  spec.argv = {SUM_CHECK_WORKER_BIN};
  spec.set_env = node_env("worker", free_port(), 1, 1);
  spec.set_env.push_back({"BYTEPS_FORCE_DISTRIBUTED", "1"});
  spec.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", "2"});
  spec.timeout_s = 10;
  ExpectRefusal(spec, {"cannot reach the scheduler at 127.0.0.1:"});
}

}  // namespace
}  // namespace caravan::test
