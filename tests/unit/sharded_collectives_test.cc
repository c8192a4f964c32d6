// Reduce-scatter and allgather through the servers (C API 1.4) and
// all-to-all (1.7): how their tensors are cut into shards or blocks and
// placed (plan_shards, plan_blocks, home_servers), and the data path in one
// process (tests/support/in_process_job.h): the sums, shards and blocks
// each worker ends with, and what each worker gets back.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/error.h"
#include "engine/control/node_info.h"
#include "engine/server/push_pull_request.h"
#include "engine/wire/header.h"
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

TEST(BlockPlan, AWorkerPlansTheBlocksItSendsAndGetsAtTheirPeersOffsets) {
  const size_t block = 40000;  // bytes, 10000 floats
  for (int me = 0; me < 3; ++me) {
    auto parts = plan_blocks("x", 3 * block, 4, 8192, 2, {}, 3, me, {});
    std::vector<size_t> sent(3, 0), got(3, 0);
    for (const Partition& p : parts) {
      ASSERT_TRUE((p.owner == me) != (p.target == me)) << "one end is this worker";
      const int peer = p.owner == me ? p.target : p.owner;
      EXPECT_NE(peer, me);
      // Within the peer's block, of the send or the receive buffer.
      EXPECT_EQ(p.offset / block, static_cast<size_t>(peer));
      EXPECT_EQ((p.offset + p.bytes - 1) / block, static_cast<size_t>(peer));
      (p.owner == me ? sent : got)[static_cast<size_t>(peer)] += p.bytes;
    }
    for (int peer = 0; peer < 3; ++peer) {
      const size_t want = peer == me ? 0 : block;
      EXPECT_EQ(sent[static_cast<size_t>(peer)], want) << me << " -> " << peer;
      EXPECT_EQ(got[static_cast<size_t>(peer)], want) << peer << " -> " << me;
    }
  }
  // Both ends of a block compute its keys alike, and one block's keys are
  // no other's.
  auto of_0 = plan_blocks("x", 3 * block, 4, 8192, 2, {}, 3, 0, {});
  auto of_2 = plan_blocks("x", 3 * block, 4, 8192, 2, {}, 3, 2, {});
  std::vector<uint64_t> zero_to_two, at_two;
  for (const Partition& p : of_0)
    if (p.owner == 0 && p.target == 2) zero_to_two.push_back(p.key);
  for (const Partition& p : of_2)
    if (p.owner == 0 && p.target == 2) at_two.push_back(p.key);
  EXPECT_FALSE(zero_to_two.empty());
  EXPECT_EQ(zero_to_two, at_two);
  for (const Partition& p : of_0) {
    if (p.owner == 0 && p.target == 2) continue;
    for (uint64_t k : zero_to_two) EXPECT_NE(p.key, k);
  }
}

TEST(BlockPlan, ABlockLiesWholeOnItsReceiversHomeServer) {
  auto parts = plan_blocks("x", 3 * 40000, 4, 8192, 2, {}, 3, 0, {1, 0, -1});
  std::vector<int> to_two(2, 0);
  for (const Partition& p : parts) {
    if (p.target == 0) {
      EXPECT_EQ(p.server, 1) << "worker 0's home";
    }
    if (p.target == 1) {
      EXPECT_EQ(p.server, 0) << "worker 1's home";
    }
    if (p.target == 2) ++to_two[static_cast<size_t>(p.server)];
  }
  EXPECT_GT(to_two[0], 0) << "a block for a worker without a home spreads";
  EXPECT_GT(to_two[1], 0) << "a block for a worker without a home spreads";
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

TEST_P(Sharded, AlltoallGivesEachWorkerItsBlockFromEveryOther) {
  const int workers = 3;
  const size_t count = 3 * 5000, block = count / workers;
  InProcessJob job(workers, 2, with(4096), GetParam());
  for (int round = 0; round < 3; ++round) {
    // Worker w's element i goes to worker i / block.
    std::vector<std::vector<float>> send(workers, std::vector<float>(count));
    std::vector<std::vector<float>> recv(workers, std::vector<float>(count, -1.0f));
    for (int w = 0; w < workers; ++w)
      for (size_t i = 0; i < count; ++i) send[w][i] = value(w, i) + static_cast<float>(round);
    std::vector<std::shared_ptr<Operation>> ops;
    for (int w = 0; w < workers; ++w)
      ops.push_back(job.worker(w).submit_alltoall("a2a", send[w].data(), recv[w].data(), count,
                                                  CARAVAN_FLOAT32, 0));
    for (int w = 0; w < workers; ++w) {
      std::string error;
      ASSERT_EQ(job.worker(w).wait(*ops[static_cast<size_t>(w)], &error), 0) << error;
    }
    for (int w = 0; w < workers; ++w)
      for (size_t i = 0; i < count; ++i) {
        // Block r of worker w's result: worker r's block for w.
        const int from = static_cast<int>(i / block);
        const size_t there = static_cast<size_t>(w) * block + i % block;
        ASSERT_EQ(recv[w][i], value(from, there) + static_cast<float>(round))
            << "worker " << w << " element " << i << " round " << round;
      }
    for (int w = 0; w < workers; ++w)
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(send[w][i], value(w, i) + static_cast<float>(round)) << "send is only read";
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

// Requests made by hand: what no PushPullClient sends, a server refuses.
// The answers outlive it (a refused key's waiters are told later).
class RawRequests {
 public:
  explicit RawRequests(InProcessJob& job) : job_(job) {}

  void ask(int worker, uint64_t key, uint32_t flags, int root) {
    {
      std::lock_guard<std::mutex> lock(told_->mu);
      told_->answers.erase(worker);
    }
    auto k = std::make_shared<uint64_t>(key);
    KVMessage m;
    m.head.flags = wire::kPush | wire::kPull | flags;
    m.head.cmd = root;
    m.head.dtype = CARAVAN_FLOAT32;
    m.keys = Blob{k.get(), sizeof key, k};
    job_.worker_kv(worker).request(
        server_id(0), std::move(m),
        [told = told_, worker](KVMessage&& r) {
          std::lock_guard<std::mutex> lock(told->mu);
          told->answers[worker] = {r.head.status, r.is_error() ? r.error_text() : ""};
          told->cv.notify_all();
        },
        [](caravan_status) {});
  }
  // The answer to worker `worker`'s last request: status, error text.
  std::pair<int, std::string> answer_of(int worker) {
    std::unique_lock<std::mutex> lock(told_->mu);
    EXPECT_TRUE(told_->cv.wait_for(lock, std::chrono::seconds(10),
                                   [&] { return told_->answers.count(worker) > 0; }))
        << "no answer for worker " << worker;
    return told_->answers[worker];
  }

 private:
  struct Told {
    std::mutex mu;
    std::condition_variable cv;
    std::map<int, std::pair<int, std::string>> answers;  // by worker
  };
  InProcessJob& job_;
  std::shared_ptr<Told> told_ = std::make_shared<Told>();
};

TEST(ShardedInProcess, ABlockGoesToOneWorkerOnly) {
  InProcessJob job(3, 1, with(4096));
  RawRequests raw(job);
  // Workers 1 and 2 both ask for a block that worker 0 sends to one worker.
  raw.ask(1, 77, wire::kBroadcast | wire::kDirect, 0);
  raw.ask(2, 77, wire::kBroadcast | wire::kDirect, 0);
  auto [status, text] = raw.answer_of(2);
  EXPECT_EQ(status, CARAVAN_ERR_MISMATCH);
  EXPECT_NE(
      text.find("key 77 goes from worker 0 to one worker, but workers 1 and 2 both ask for it"),
      std::string::npos)
      << text;
  // A key relayed to one worker is no broadcast.
  raw.ask(1, 78, wire::kBroadcast | wire::kDirect, 0);
  raw.ask(2, 78, wire::kBroadcast, 0);
  std::tie(status, text) = raw.answer_of(2);
  EXPECT_EQ(status, CARAVAN_ERR_MISMATCH);
  EXPECT_NE(text.find("worker 2 asks for key 78 as a broadcast, earlier requests as a relay to "
                      "one worker (all-to-all)"),
            std::string::npos)
      << text;
}

TEST(ShardedInProcess, ARelayToOneWorkerIsABroadcastsKind) {
  KVMessage m;
  m.head.sender = worker_id(0);
  m.head.flags = wire::kPush | wire::kPull | wire::kDirect;
  uint64_t key = 5;
  m.keys = Blob{&key, sizeof key, nullptr};
  m.head.dtype = CARAVAN_FLOAT32;
  PushPullRequest req;
  std::string why;
  EXPECT_FALSE(parse_push_pull_request(m, 2, &req, &why));
  EXPECT_NE(why.find("without the broadcast flag"), std::string::npos) << why;
  m.head.flags |= wire::kBroadcast;
  m.head.cmd = 1;
  ASSERT_TRUE(parse_push_pull_request(m, 2, &req, &why)) << why;
  EXPECT_TRUE(req.direct);
  EXPECT_EQ(req.root, 1);
}

}  // namespace
}  // namespace caravan::test
