// Mixed mode (BYTEPS_ENABLE_MIXED_MODE): the shares of dedicated and
// colocated servers, and partition plans that follow them.
#include "engine/worker/server_shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/model_layers.h"
#include "engine/worker/partition_plan.h"

namespace caravan {
namespace {

// The busiest link's bytes per step, in units of one worker's gradients,
// with dedicated servers holding x (server_shares.cc's model).
double busiest_link(size_t n, size_t k, double x) {
  double worker_host = x + 2 * (1 - x) * static_cast<double>(n - 1) / static_cast<double>(n);
  double server_host = k ? static_cast<double>(n) * x / static_cast<double>(k) : 0;
  return std::max(worker_host, server_host);
}

TEST(ServerShares, DedicatedFractionBalancesTheLinks) {
  EXPECT_DOUBLE_EQ(dedicated_fraction(4, 2), 0.6);
  EXPECT_DOUBLE_EQ(dedicated_fraction(4, 1), 1.0 / 3);
  EXPECT_DOUBLE_EQ(dedicated_fraction(4, 4), 1.0) << "as many server hosts as worker hosts";
  EXPECT_DOUBLE_EQ(dedicated_fraction(4, 8), 1.0);
  EXPECT_DOUBLE_EQ(dedicated_fraction(1, 2), 0.0) << "one worker host keeps its bytes at home";
  EXPECT_DOUBLE_EQ(dedicated_fraction(4, 0), 0.0);
  // No other split loads the busiest link less.
  for (size_t n : {2, 3, 4, 8, 16})
    for (size_t k = 1; k <= n; ++k) {
      double best = busiest_link(n, k, dedicated_fraction(n, k));
      for (int i = 0; i <= 100; ++i)
        EXPECT_LE(best, busiest_link(n, k, i / 100.0) + 1e-12) << n << " + " << k << " hosts";
    }
  // The cluster benchmark's shapes: 4 worker hosts + 2 (1.2 against
  // colocated's 1.5) and + 1 (1.33).
  EXPECT_NEAR(busiest_link(4, 2, dedicated_fraction(4, 2)), 1.2, 1e-12);
  EXPECT_NEAR(busiest_link(4, 1, dedicated_fraction(4, 1)), 4.0 / 3, 1e-12);
}

TEST(ServerShares, ColocatedAndDedicatedServersShareByKind) {
  ServerShares s = mixed_mode_shares({true, true, false, true, true, false}, 4);
  ASSERT_EQ(s.shares.size(), 6u);
  for (int i : {0, 1, 3, 4}) EXPECT_DOUBLE_EQ(s.shares[i], 0.1);
  for (int i : {2, 5}) EXPECT_DOUBLE_EQ(s.shares[i], 0.3);
  EXPECT_NE(s.summary.find("dedicated servers (2) hold 60%"), std::string::npos) << s.summary;
}

TEST(ServerShares, OneKindOnlyIsEven) {
  for (const std::vector<bool>& colocated :
       {std::vector<bool>{true, true}, std::vector<bool>{false, false}}) {
    ServerShares s = mixed_mode_shares(colocated, 2);
    EXPECT_TRUE(s.shares.empty());
    EXPECT_NE(s.summary.find("even shares"), std::string::npos) << s.summary;
  }
}

TEST(ServerShares, PlansHoldTheSharesAndCoverEveryTensor) {
  const std::vector<double> shares = {0.1, 0.1, 0.3, 0.1, 0.1, 0.3};
  for (size_t pbytes : {size_t{65536}, size_t{131072}, size_t{1048576}}) {
    std::vector<double> load(shares.size(), 0);
    double total = 0;
    for (const models::Layer& l : models::resnet50()) {
      size_t bytes = l.elements * 4;
      auto parts = plan_partitions(l.name, bytes, 4, pbytes, 6, shares);
      size_t offset = 0;
      for (const Partition& p : parts) {
        ASSERT_EQ(p.offset, offset);
        ASSERT_GE(p.server, 0);
        ASSERT_LT(p.server, 6);
        load[static_cast<size_t>(p.server)] += static_cast<double>(p.bytes);
        offset += p.bytes;
      }
      ASSERT_EQ(offset, bytes) << l.name;
      total += static_cast<double>(bytes);
    }
    for (size_t s = 0; s < shares.size(); ++s) {
      std::printf("partition %7zu B: server %zu holds %.3f (share %.2f)\n", pbytes, s,
                  load[s] / total, shares[s]);
      EXPECT_NEAR(load[s] / total, shares[s], 0.03) << "server " << s << ", partition " << pbytes;
    }
  }
}

TEST(ServerShares, ConsecutivePartitionsGoToOtherServers) {
  // As the even spread's round robin does, so a tensor's partitions are
  // summed on several servers at once.
  const std::vector<double> shares = {0.1, 0.1, 0.1, 0.1, 0.3, 0.3};
  auto parts = plan_partitions("fc.weight", size_t{32} << 20, 4, 131072, 6, shares);
  size_t same = 0;
  for (size_t i = 1; i < parts.size(); ++i) same += parts[i].server == parts[i - 1].server;
  EXPECT_LT(same, parts.size() / 5) << same << " of " << parts.size() << " follow their server";
}

}  // namespace
}  // namespace caravan
