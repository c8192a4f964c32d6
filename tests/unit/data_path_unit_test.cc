// The data path in one process: the workers' PushPullClient and the
// servers' SumServer, each over its own KVEndpoint and fake van
// (tests/support/fake_van.h). The orders a real network makes rare (an
// answer before its push is reported sent, answers late or in reverse, a
// send that fails) are held here on purpose, so each test sees them every
// time, in milliseconds.
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "caravan/caravan.h"
#include "tests/support/in_process_job.h"

namespace caravan::test {
namespace {

constexpr std::chrono::milliseconds kWait{10000};

// Worker w's element i is w * 1000 + i % 1000: sums are exact in float.
std::vector<std::vector<float>> tensors(int workers, size_t count) {
  std::vector<std::vector<float>> t(static_cast<size_t>(workers), std::vector<float>(count));
  for (int w = 0; w < workers; ++w)
    for (size_t i = 0; i < count; ++i)
      t[static_cast<size_t>(w)][i] = static_cast<float>(w * 1000 + static_cast<int>(i % 1000));
  return t;
}

float sum_at(int workers, size_t i) {
  float s = 0;
  for (int w = 0; w < workers; ++w) s += static_cast<float>(w * 1000 + static_cast<int>(i % 1000));
  return s;
}

// The index of the first element that is not the sum, or -1.
long first_wrong(const std::vector<float>& got, int workers) {
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != sum_at(workers, i)) return static_cast<long>(i);
  return -1;
}

JobConfig with(size_t partition_bytes, int op_timeout_s = 10) {
  JobConfig c;
  c.partition_bytes = static_cast<int64_t>(partition_bytes);
  c.op_timeout_s = op_timeout_s;
  return c;
}

// The names run.sh --cpu and `top -H` tell the data path's threads apart by.
std::multiset<std::string> thread_names() {
  std::multiset<std::string> names;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return names;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  closedir(dir);
  return names;
}

TEST(DataPathInProcess, ItsThreadsAreNamed) {
  InProcessJob job(2, 1, with(1 << 20));
  // A thread names itself when it starts running, which may be after the job
  // is built: once a push_pull has gone through, every endpoint's receiving
  // thread has delivered, and a summation thread has summed (800 KB is no
  // push small enough to be summed inline).
  auto data = tensors(2, 200000);
  std::vector<std::string> errors;
  ASSERT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0, 0}))
      << errors[0] << errors[1];
  auto names = thread_names();
  EXPECT_EQ(names.count("cv-kv-recv"), 3u)
      << "one receiving thread per endpoint (2 workers, 1 server)";
  EXPECT_GE(names.count("cv-sum"), 1u) << "the server's summation threads";
}

TEST(DataPathInProcess, SumsOfEveryPartitionOverTwoServers) {
  InProcessJob job(2, 2, with(4096));
  for (int round = 0; round < 3; ++round) {
    auto data = tensors(2, 10000);  // 40,000 bytes: 10 partitions on 2 servers
    std::vector<std::string> errors;
    EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0, 0}))
        << errors[0] << errors[1];
    EXPECT_EQ(first_wrong(data[0], 2), -1) << "round " << round;
    EXPECT_EQ(first_wrong(data[1], 2), -1) << "round " << round;
  }
}

// The van reads the caller's tensor until it reports the push sent
// (van_v2.h): a sum that arrives before then waits, and lands after.
TEST(DataPathInProcess, AnAnswerBeforeItsSentEventWaitsForIt) {
  InProcessJob job(2, 1);
  auto data = tensors(2, 1000);
  job.worker_van(0).hold_sent(true);
  auto op0 = job.worker(0).submit("t", data[0].data(), 1000, CARAVAN_FLOAT32, 0, kSum);
  auto op1 = job.worker(1).submit("t", data[1].data(), 1000, CARAVAN_FLOAT32, 0, kSum);
  std::string error;
  ASSERT_EQ(job.worker(1).wait(*op1, &error), 0) << error;
  ASSERT_TRUE(job.worker_van(0).wait_for_deliveries(1, kWait));
  EXPECT_EQ(job.worker(0).poll(*op0, &error), 0) << "done before its push was reported sent";
  EXPECT_EQ(data[0][7], 7.0f) << "the sum was written while the van still read the tensor";
  job.worker_van(0).release_sent();
  ASSERT_EQ(job.worker(0).wait(*op0, &error), 0) << error;
  EXPECT_EQ(first_wrong(data[0], 2), -1);
}

// A send the van reports failed can never be answered: the operation ends
// then, with the van's word, not at CARAVAN_OP_TIMEOUT.
TEST(DataPathInProcess, AFailedSendEndsTheOperationAtOnce) {
  InProcessJob job(1, 1, with(4096000, 30));
  auto data = tensors(1, 1000);
  job.worker_van(0).fail_sends(1);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{CARAVAN_ERR_TRANSPORT}));
  EXPECT_NE(errors[0].find("sending to server 0 failed (van status"), std::string::npos)
      << errors[0];
  EXPECT_LT(std::chrono::steady_clock::now() - start, kWait);
  // The tensor is free, and the next push_pull of it goes through.
  data = tensors(1, 1000);
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0})) << errors[0];
}

// A send the van refuses at once (Van::send throws) fails its operation,
// and the tensor is free again.
TEST(DataPathInProcess, ARefusedSendFailsTheOperation) {
  InProcessJob job(1, 1);
  auto data = tensors(1, 1000);
  job.worker_van(0).refuse_sends(1);
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{CARAVAN_ERR_TRANSPORT}));
  EXPECT_NE(errors[0].find("send refused by the test"), std::string::npos) << errors[0];
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0})) << errors[0];
}

// The caller gave up at CARAVAN_OP_TIMEOUT: the answer that comes later,
// large enough to have been lent the tensor's memory, lands elsewhere, and
// once it is in, the tensor is free for the next push_pull.
TEST(DataPathInProcess, ALateAnswerLeavesATimedOutTensorAlone) {
  InProcessJob job(2, 1, with(4096000, 1));
  const size_t n = 65536;  // 256 KiB: received into the tensor where lent
  auto data = tensors(2, n);
  job.server_van(0).hold_deliveries(true);
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors),
            (std::vector<int>{CARAVAN_ERR_TIMEOUT, CARAVAN_ERR_TIMEOUT}));
  EXPECT_NE(errors[0].find("waiting for server 0 (1 partition)"), std::string::npos) << errors[0];
  for (auto& t : data) std::fill(t.begin(), t.end(), -1.0f);  // the callers' again
  size_t before0 = job.worker_van(0).deliveries(), before1 = job.worker_van(1).deliveries();
  job.server_van(0).hold_deliveries(false);
  EXPECT_EQ(job.server_van(0).deliver_held(), 2u);
  ASSERT_TRUE(job.worker_van(0).wait_for_deliveries(before0 + 1, kWait));
  ASSERT_TRUE(job.worker_van(1).wait_for_deliveries(before1 + 1, kWait));
  for (auto& t : data)
    for (float v : t) ASSERT_EQ(v, -1.0f) << "a late answer was written into the tensor";
  data = tensors(2, n);
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0, 0}))
      << errors[0] << errors[1];
  EXPECT_EQ(first_wrong(data[0], 2), -1);
}

// A request of another generation of the job (a worker left out at a
// regroup, paused and woken) is refused, never summed: the round waits for
// the worker of this generation; with the generations agreeing, the same
// endpoints sum exactly.
TEST(DataPathInProcess, ARequestOfAnotherGenerationIsNeverSummed) {
  InProcessJob job(2, 1, with(4096000, 1));
  job.server_kv(0).set_generation(3);
  job.worker_kv(0).set_generation(3);
  job.worker_kv(1).set_generation(2);
  auto data = tensors(2, 1000);
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors),
            (std::vector<int>{CARAVAN_ERR_TIMEOUT, CARAVAN_ERR_TIMEOUT}));
  job.worker_kv(1).set_generation(3);
  data = tensors(2, 1000);
  EXPECT_EQ(job.push_pull_all("u", data, &errors), (std::vector<int>{0, 0}))
      << errors[0] << errors[1];
  EXPECT_EQ(first_wrong(data[0], 2), -1);
  EXPECT_EQ(first_wrong(data[1], 2), -1);
}

// An answer that never comes is named at the deadline: which server, how
// many partitions.
TEST(DataPathInProcess, ALostAnswerIsNamedAtTheDeadline) {
  InProcessJob job(1, 2, with(4096, 1));
  auto data = tensors(1, 2048);  // 8 partitions, 4 on each server
  job.server_van(1).drop_sends(1);
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{CARAVAN_ERR_TIMEOUT}));
  EXPECT_NE(errors[0].find("waiting for server 1 (1 partition)"), std::string::npos) << errors[0];
}

// One server's summation threads finish keys in any order: answers that
// come back newest first still land in their own partitions.
TEST(DataPathInProcess, AnswersInReverseOrderLandWhereTheyBelong) {
  InProcessJob job(2, 1, with(4096));
  auto data = tensors(2, 10000);  // 10 partitions
  job.server_van(0).hold_deliveries(true);
  auto op0 = job.worker(0).submit("t", data[0].data(), 10000, CARAVAN_FLOAT32, 0, kSum);
  auto op1 = job.worker(1).submit("t", data[1].data(), 10000, CARAVAN_FLOAT32, 0, kSum);
  ASSERT_TRUE(job.server_van(0).wait_for_held(0, 20, kWait));
  job.server_van(0).hold_deliveries(false);
  EXPECT_EQ(job.server_van(0).deliver_held(/*newest_first=*/true), 20u);
  std::string error;
  ASSERT_EQ(job.worker(0).wait(*op0, &error), 0) << error;
  ASSERT_EQ(job.worker(1).wait(*op1, &error), 0) << error;
  EXPECT_EQ(first_wrong(data[0], 2), -1);
  EXPECT_EQ(first_wrong(data[1], 2), -1);
}

// Answers of at least 64 KiB are received straight into the tensor.
TEST(DataPathInProcess, LargeAnswersLandInTheTensorItself) {
  InProcessJob job(2, 1, with(262144));
  auto data = tensors(2, 262144);  // 1 MiB: 4 partitions of 256 KiB
  std::vector<std::string> errors;
  EXPECT_EQ(job.push_pull_all("t", data, &errors), (std::vector<int>{0, 0}))
      << errors[0] << errors[1];
  EXPECT_EQ(job.worker_van(0).lent_deliveries(), 4u);
  EXPECT_EQ(first_wrong(data[0], 2), -1);
}

// Two workers with one name of two sizes: both are told, neither gets a sum.
TEST(DataPathInProcess, WorkersThatDisagreeOnASizeAreBothTold) {
  InProcessJob job(2, 1);
  std::vector<float> a(1000, 1.0f), b(999, 1.0f);
  auto op0 = job.worker(0).submit("t", a.data(), a.size(), CARAVAN_FLOAT32, 0, kSum);
  auto op1 = job.worker(1).submit("t", b.data(), b.size(), CARAVAN_FLOAT32, 0, kSum);
  std::string e0, e1;
  EXPECT_EQ(job.worker(0).wait(*op0, &e0), CARAVAN_ERR_MISMATCH) << e0;
  EXPECT_EQ(job.worker(1).wait(*op1, &e1), CARAVAN_ERR_MISMATCH) << e1;
  for (const std::string& e : {e0, e1})
    EXPECT_NE(e.find("the same tensor name with different sizes or dtypes"), std::string::npos)
        << e;
  EXPECT_EQ(a[0], 1.0f);
}

// The job failing (KVEndpoint::fail_all, as Node does when the scheduler
// says so) ends every operation in flight with the reason.
TEST(DataPathInProcess, AJobFailureEndsEveryOperationInFlight) {
  InProcessJob job(2, 1, with(4096));
  auto data = tensors(2, 10000);
  job.server_van(0).hold_deliveries(true);
  auto op = job.worker(0).submit("t", data[0].data(), 10000, CARAVAN_FLOAT32, 0, kSum);
  auto op1 = job.worker(1).submit("t", data[1].data(), 10000, CARAVAN_FLOAT32, 0, kSum);
  ASSERT_TRUE(job.server_van(0).wait_for_held(0, 20, kWait));
  job.worker_kv(0).fail_all(CARAVAN_ERR_PEER_LOST, "the scheduler aborted the job: test");
  std::string error;
  EXPECT_EQ(job.worker(0).wait(*op, &error), CARAVAN_ERR_PEER_LOST);
  EXPECT_NE(error.find("the scheduler aborted the job: test"), std::string::npos) << error;
  // The answers to worker 0's failed requests still come: dropped quietly,
  // not warned of as malformed (after every regroup, a warning per answer
  // in flight looked like a fault).
  size_t before = job.worker_van(0).deliveries();
  testing::internal::CaptureStderr();
  job.server_van(0).hold_deliveries(false);
  job.server_van(0).deliver_held();
  EXPECT_EQ(job.worker(1).wait(*op1, &error), 0) << error;
  bool answered = job.worker_van(0).wait_for_deliveries(before + 1, kWait);
  std::string logged = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(answered);
  EXPECT_EQ(logged.find("malformed"), std::string::npos) << logged;
}

}  // namespace
}  // namespace caravan::test
