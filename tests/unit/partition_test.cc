// plan_partitions: how tensors are cut and spread over servers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/model_layers.h"
#include "engine/worker/partition_plan.h"

namespace caravan {
namespace {

struct Tensor {
  std::string name;
  size_t bytes;
};

std::vector<Tensor> as_float32(const std::vector<models::Layer>& layers) {
  std::vector<Tensor> t;
  for (auto& l : layers) t.push_back({l.name, l.elements * 4});
  return t;
}
std::vector<Tensor> resnet50() { return as_float32(models::resnet50()); }
std::vector<Tensor> bert_large() { return as_float32(models::bert_large()); }

// Every structural promise for one tensor.
void check_plan(const std::vector<Partition>& parts, size_t total, size_t elem, size_t pbytes,
                int servers) {
  ASSERT_FALSE(parts.empty());
  size_t offset = 0;
  for (const Partition& p : parts) {
    EXPECT_EQ(p.offset, offset) << "gap or overlap";
    EXPECT_GT(p.bytes, 0u);
    EXPECT_EQ(p.bytes % elem, 0u) << "partition splits an element";
    EXPECT_EQ(p.offset % elem, 0u);
    EXPECT_LE(p.bytes, std::max(pbytes / elem, size_t{1}) * elem);
    EXPECT_GE(p.server, 0);
    EXPECT_LT(p.server, servers);
    offset += p.bytes;
  }
  EXPECT_EQ(offset, total) << "partitions do not cover the tensor";
}

TEST(PartitionPlan, NameHashIsPinned) {
  // 64-bit FNV-1a plus the splitmix64 finaliser; any change breaks
  // compatibility between workers of different builds.
  EXPECT_EQ(name_hash(""), 0x552d3fb62b3c344full);
  EXPECT_EQ(name_hash("conv1.weight"), 0x0065defc8413df21ull);
  EXPECT_EQ(name_hash("fc.bias#0"), 0x56d9714691656202ull);
}

// One name cut in 1, 2 or 3 partitions (workers with another size of it)
// shares no key between the cuts, so a server never sums partitions of
// two cuts that happen to be equal in size (the first 4096000 bytes of an
// 8192000-byte tensor and a whole 4096000-byte one were summed, and the
// second worker reported success).
TEST(PartitionPlan, DifferentCutsOfOneNameShareNoKey) {
  std::set<uint64_t> keys;
  size_t n = 0;
  for (size_t bytes : {size_t{4096000}, size_t{8192000}, size_t{12288000}}) {
    auto parts = plan_partitions("emb.weight", bytes, 4, 4096000, 1);
    for (auto& p : parts) keys.insert(p.key);
    n += parts.size();
  }
  EXPECT_EQ(n, 6u);
  EXPECT_EQ(keys.size(), 6u);
  // A tensor of one partition keeps the key "<name>#0".
  EXPECT_EQ(plan_partitions("fc.bias", 400, 4, 4096000, 2)[0].key, name_hash("fc.bias#0"));
}

TEST(PartitionPlan, ModelListsAreReal) {
  EXPECT_EQ(models::resnet50().size(), 161u);
  EXPECT_EQ(models::total_elements(models::resnet50()), 25557032u);
  EXPECT_EQ(models::bert_large().size(), 391u);
  EXPECT_EQ(models::total_elements(models::bert_large()), 335141888u);
}

TEST(PartitionPlan, CoversEveryTensorExactly) {
  for (int servers : {1, 2, 3, 4, 8}) {
    for (size_t pbytes : {size_t{4096000}, size_t{65536}, size_t{1000}}) {
      for (auto& t : resnet50()) {
        SCOPED_TRACE(t.name + " on " + std::to_string(servers) + " servers, partition " +
                     std::to_string(pbytes));
        check_plan(plan_partitions(t.name, t.bytes, 4, pbytes, servers), t.bytes, 4, pbytes,
                   servers);
      }
    }
  }
}

TEST(PartitionPlan, OddSizesAndElementWidths) {
  for (size_t elem : {1, 2, 4, 8}) {
    for (size_t elements : {1, 2, 7, 1000, 16383, 16385, 123457, 1000003}) {
      for (int servers : {1, 2, 3, 5, 8}) {
        size_t total = elements * elem;
        SCOPED_TRACE(std::to_string(elements) + " x " + std::to_string(elem) + " bytes on " +
                     std::to_string(servers));
        check_plan(plan_partitions("t", total, elem, 40000, servers), total, elem, 40000, servers);
      }
    }
  }
}

TEST(PartitionPlan, ElementLargerThanPartitionStaysWhole) {
  // 8-byte elements with 3-byte partitions: one element each.
  auto parts = plan_partitions("big-elements", 80, 8, 3, 2);
  ASSERT_EQ(parts.size(), 10u);
  for (auto& p : parts) EXPECT_EQ(p.bytes, 8u);
  check_plan(parts, 80, 8, 3, 2);
}

TEST(PartitionPlan, OneElementTensors) {
  for (int servers : {1, 2, 7}) {
    for (size_t elem : {1, 2, 4, 8}) {
      auto parts = plan_partitions("scalar", elem, elem, 4096000, servers);
      ASSERT_EQ(parts.size(), 1u);
      EXPECT_EQ(parts[0].offset, 0u);
      EXPECT_EQ(parts[0].bytes, elem);
      EXPECT_EQ(parts[0].server, static_cast<int>(name_hash("scalar") % servers));
    }
  }
}

TEST(PartitionPlan, LargeTensorsSpreadOverAMultipleOfServers) {
  for (int servers : {2, 3, 4, 8}) {
    for (auto& t : resnet50()) {
      auto parts = plan_partitions(t.name, t.bytes, 4, 4096000, servers);
      SCOPED_TRACE(t.name + " on " + std::to_string(servers));
      if (t.bytes >= kSpreadMinBytes) {
        EXPECT_EQ(parts.size() % servers, 0u) << parts.size() << " partitions";
        std::map<int, int> per_server;
        for (auto& p : parts) ++per_server[p.server];
        EXPECT_EQ(per_server.size(), static_cast<size_t>(servers));
        for (auto& [s, n] : per_server) EXPECT_EQ(n, static_cast<int>(parts.size()) / servers);
      } else {
        EXPECT_EQ(parts.size(), 1u) << "small tensors stay whole";
      }
    }
  }
  // Exactly at the threshold spreads; one element under it does not.
  EXPECT_EQ(plan_partitions("edge", kSpreadMinBytes, 4, 4096000, 3).size(), 3u);
  EXPECT_EQ(plan_partitions("edge", kSpreadMinBytes - 4, 4, 4096000, 3).size(), 1u);
}

TEST(PartitionPlan, KeysDoNotDependOnPlanningOrder) {
  auto tensors = resnet50();
  auto plan_all = [](const std::vector<Tensor>& ts) {
    std::map<std::string, std::vector<Partition>> out;
    for (auto& t : ts) out[t.name] = plan_partitions(t.name, t.bytes, 4, 4096000, 4);
    return out;
  };
  auto forward = plan_all(tensors);
  std::reverse(tensors.begin(), tensors.end());
  std::rotate(tensors.begin(), tensors.begin() + 50, tensors.end());
  auto shuffled = plan_all(tensors);
  ASSERT_EQ(forward.size(), shuffled.size());
  for (auto& [name, parts] : forward) {
    auto& other = shuffled.at(name);
    ASSERT_EQ(parts.size(), other.size()) << name;
    for (size_t i = 0; i < parts.size(); ++i) {
      EXPECT_EQ(parts[i].key, other[i].key) << name << " #" << i;
      EXPECT_EQ(parts[i].server, other[i].server) << name << " #" << i;
      EXPECT_EQ(parts[i].offset, other[i].offset) << name << " #" << i;
    }
  }
}

TEST(PartitionPlan, KeysAreDistinct) {
  std::set<uint64_t> keys;
  size_t count = 0;
  auto add = [&](const std::string& name, size_t bytes) {
    for (auto& p : plan_partitions(name, bytes, 4, 65536, 8)) {
      keys.insert(p.key);
      ++count;
    }
  };
  for (auto& t : resnet50()) add(t.name, t.bytes);
  // Names that differ only in a digit or a '#', which the key mixes in.
  for (int i = 0; i < 20000; ++i) add("grad_" + std::to_string(i), 4 * (1 + i % 50000));
  add("a", 65536 * 16);
  add("a#1", 65536 * 16);
  add("a#1#0", 65536 * 16);
  add("a#10", 65536 * 16);
  EXPECT_EQ(keys.size(), count) << "two partitions share a key";
  EXPECT_GT(count, 20000u);
}

// The most loaded server holds at most 1.05x the mean, for real models on
// 2, 3, 4 and 8 servers, at the default and at a small partition size.
TEST(PartitionPlan, ModelLoadIsBalanced) {
  for (auto& [model, tensors] :
       {std::make_pair("ResNet-50", resnet50()), std::make_pair("BERT-large", bert_large())}) {
    for (size_t pbytes : {size_t{4096000}, size_t{1} << 20}) {
      for (int servers : {2, 3, 4, 8}) {
        std::vector<double> load(servers, 0);
        double total = 0;
        for (auto& t : tensors) {
          for (auto& p : plan_partitions(t.name, t.bytes, 4, pbytes, servers))
            load[p.server] += static_cast<double>(p.bytes);
          total += static_cast<double>(t.bytes);
        }
        double mean = total / servers;
        double max = *std::max_element(load.begin(), load.end());
        std::printf("%-10s partition %7zu B, %d servers: max/mean %.4f\n", model, pbytes, servers,
                    max / mean);
        EXPECT_LE(max, 1.05 * mean)
            << model << " on " << servers << " servers: max " << max << " mean " << mean;
        EXPECT_DOUBLE_EQ(std::accumulate(load.begin(), load.end(), 0.0), total);
      }
    }
  }
}

TEST(PartitionPlan, TensorsOver4GiBUseSizeT) {
  static_assert(sizeof(size_t) == 8, "64-bit build expected");
  const size_t total = (size_t{4} << 30) + 1;  // 4 GiB + 1 byte of uint8, never allocated
  for (int servers : {1, 3, 8}) {
    auto parts = plan_partitions("huge", total, 1, 4096000, servers);
    size_t expected = (total + 4096000 - 1) / 4096000;  // 1049
    expected = (expected + servers - 1) / servers * servers;
    EXPECT_EQ(parts.size(), expected);
    check_plan(parts, total, 1, 4096000, servers);
    EXPECT_EQ(parts.back().offset + parts.back().bytes, total);
  }
  // One partition larger than 4 GiB keeps its full 64-bit length.
  const size_t five = (size_t{5} << 30) + 3;
  auto whole = plan_partitions("whole", five, 1, size_t{8} << 30, 1);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].bytes, five);
}

}  // namespace
}  // namespace caravan
