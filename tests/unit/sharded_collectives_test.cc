// Reduce-scatter and allgather through the servers (C API 1.4): how their
// tensors are cut into shards and placed (plan_shards, home_servers), and
// the data path in one process (tests/support/in_process_job.h): the sums
// and shards each worker ends with, and what each worker gets back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/error.h"
#include "engine/control/node_info.h"
#include "engine/worker/distributed_worker.h"
#include "engine/worker/partition_plan.h"
#include "tests/support/in_process_job.h"

namespace caravan::test {
namespace {

JobConfig with(size_t partition_bytes) {
  JobConfig c;
  c.partition_bytes = static_cast<int64_t>(partition_bytes);
  c.op_timeout_s = 10;
  return c;
}

// Worker w's element i: exact in float whatever the order of the sum.
float value(int w, size_t i) { return static_cast<float>(w * 1000 + static_cast<int>(i % 997)); }

TEST(ShardPlan, EachShardIsCutAloneAndOwnedByItsRank) {
  const size_t shard = 40000;  // bytes, 10000 floats
  auto parts = plan_shards("grad", 3 * shard, 4, 8192, 2, {}, 3, {});
  std::vector<size_t> covered(3, 0);
  size_t offset = 0;
  for (const Partition& p : parts) {
    EXPECT_EQ(p.offset, offset) << "partitions in order, no gap";
    offset += p.bytes;
    ASSERT_GE(p.owner, 0);
    ASSERT_LT(p.owner, 3);
    // No partition straddles two shards.
    EXPECT_EQ(p.offset / shard, static_cast<size_t>(p.owner));
    EXPECT_EQ((p.offset + p.bytes - 1) / shard, static_cast<size_t>(p.owner));
    covered[static_cast<size_t>(p.owner)] += p.bytes;
  }
  EXPECT_EQ(offset, 3 * shard);
  EXPECT_EQ(covered, (std::vector<size_t>{shard, shard, shard}));
  // Without homes, every shard spreads over both servers.
  for (int owner = 0; owner < 3; ++owner) {
    std::vector<int> on(2, 0);
    for (const Partition& p : parts)
      if (p.owner == owner) ++on[static_cast<size_t>(p.server)];
    EXPECT_GT(on[0], 0) << "shard " << owner;
    EXPECT_GT(on[1], 0) << "shard " << owner;
  }
}

TEST(ShardPlan, AHomedShardLiesWholeOnItsServer) {
  auto parts = plan_shards("grad", 3 * 40000, 4, 8192, 2, {}, 3, {1, 0, -1});
  std::vector<int> on_other(2, 0);
  for (const Partition& p : parts) {
    if (p.owner == 0) {
      EXPECT_EQ(p.server, 1);
    }
    if (p.owner == 1) {
      EXPECT_EQ(p.server, 0);
    }
    if (p.owner == 2) ++on_other[static_cast<size_t>(p.server)];
  }
  EXPECT_GT(on_other[0], 0) << "an unhomed shard still spreads";
  EXPECT_GT(on_other[1], 0) << "an unhomed shard still spreads";
}

TEST(ShardPlan, KeysDifferFromAPushPullsOfTheSameName) {
  auto shards = plan_shards("grad", 2 * 4096, 4, 8192, 1, {}, 2, {});
  auto whole = plan_partitions("grad", 2 * 4096, 4, 8192, 1);
  for (const Partition& s : shards)
    for (const Partition& w : whole) EXPECT_NE(s.key, w.key);
}

NodeInfo node(Role role, int rank, const std::string& host) {
  NodeInfo n;
  n.role = role;
  n.rank = rank;
  n.host = host;
  return n;
}

TEST(HomeServers, AWorkersShardsGoToAServerOnItsHost) {
  // Workers 0 and 2 on host a, 1 on b, 3 on c; server 0 on b, 1 and 2 on a.
  std::vector<NodeInfo> w = {node(Role::kWorker, 0, "a"), node(Role::kWorker, 1, "b"),
                             node(Role::kWorker, 2, "a"), node(Role::kWorker, 3, "c")};
  std::vector<NodeInfo> s = {node(Role::kServer, 0, "b"), node(Role::kServer, 1, "a"),
                             node(Role::kServer, 2, "a")};
  std::vector<const NodeInfo*> workers, servers;
  for (auto& n : w) workers.push_back(&n);
  for (auto& n : s) servers.push_back(&n);
  // Host a's two workers take its two servers in turn; c has none.
  EXPECT_EQ(home_servers(workers, servers, 4), (std::vector<int>{1, 0, 2, -1}));
  EXPECT_EQ(home_servers(workers, {}, 4), (std::vector<int>{-1, -1, -1, -1}));
}

struct Sharded : ::testing::TestWithParam<std::vector<int>> {};

TEST_P(Sharded, ReduceScatterLeavesEachWorkerItsShardOfTheSum) {
  const int workers = 3;
  const size_t count = 3 * 5000;
  InProcessJob job(workers, 2, with(4096), GetParam());
  for (int round = 0; round < 3; ++round) {  // rounds roll over with push-only partitions
    std::vector<std::vector<float>> data(workers, std::vector<float>(count));
    for (int w = 0; w < workers; ++w)
      for (size_t i = 0; i < count; ++i) data[w][i] = value(w, i) + static_cast<float>(round);
    std::vector<std::string> errors;
    ASSERT_EQ(job.push_pull_all("rs", data, &errors, kSumShards), (std::vector<int>(3, 0)))
        << errors[0] << " | " << errors[1] << " | " << errors[2];
    for (int w = 0; w < workers; ++w) {
      const size_t from = static_cast<size_t>(w) * count / workers, to = from + count / workers;
      for (size_t i = 0; i < count; ++i) {
        float sum = value(0, i) + value(1, i) + value(2, i) + 3.0f * static_cast<float>(round);
        float want = (i >= from && i < to) ? sum : value(w, i) + static_cast<float>(round);
        ASSERT_EQ(data[w][i], want) << "worker " << w << " element " << i << " round " << round;
      }
    }
  }
}

TEST_P(Sharded, AllgatherGivesEveryWorkerEveryShard) {
  const int workers = 3;
  const size_t count = 3 * 5000;
  InProcessJob job(workers, 2, with(4096), GetParam());
  for (int round = 0; round < 3; ++round) {
    std::vector<std::vector<float>> data(workers, std::vector<float>(count, -1.0f));
    for (int w = 0; w < workers; ++w) {
      const size_t from = static_cast<size_t>(w) * count / workers;
      for (size_t i = from; i < from + count / workers; ++i)
        data[w][i] = value(w, i) + static_cast<float>(round);
    }
    std::vector<std::string> errors;
    ASSERT_EQ(job.push_pull_all("ag", data, &errors, kGatherShards), (std::vector<int>(3, 0)))
        << errors[0] << " | " << errors[1] << " | " << errors[2];
    for (int w = 0; w < workers; ++w)
      for (size_t i = 0; i < count; ++i) {
        int owner = static_cast<int>(i / (count / workers));
        ASSERT_EQ(data[w][i], value(owner, i) + static_cast<float>(round))
            << "worker " << w << " element " << i << " round " << round;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Homes, Sharded,
                         ::testing::Values(std::vector<int>{}, std::vector<int>{0, 1, -1}),
                         [](const auto& param_info) {
                           return param_info.param.empty() ? std::string("Spread")
                                                           : std::string("Homed");
                         });

TEST(ShardedInProcess, ANameKeepsItsKind) {
  InProcessJob job(2, 1, with(4096));
  std::vector<std::vector<float>> data(2, std::vector<float>(64, 1.0f));
  ASSERT_EQ(job.push_pull_all("t", data), (std::vector<int>{0, 0}));
  try {
    job.worker(0).submit("t", data[0].data(), 64, CARAVAN_FLOAT32, 0, kSumShards);
    FAIL() << "a push_pull's name taken for a reduce_scatter";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), CARAVAN_ERR_MISMATCH);
    EXPECT_NE(std::string(e.what()).find("first used for push_pull, now for reduce_scatter"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace caravan::test
