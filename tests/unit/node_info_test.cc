// Node registration and node-table bodies, and rank assignment.
#include "engine/control/node_info.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "engine/base/error.h"
#include "engine/wire/bytes.h"

namespace caravan {
namespace {

NodeInfo node(Role role, std::string host, std::string address, int preferred = -1, int pid = 100) {
  NodeInfo n;
  n.role = role;
  n.host = std::move(host);
  n.van_address = std::move(address);
  n.preferred_rank = preferred;
  n.pid = pid;
  return n;
}

// Every field that travels, the role by name so that a failure reads plainly.
auto fields(const NodeInfo& n) {
  return std::make_tuple(n.id, std::string(role_name(n.role)), n.rank, n.preferred_rank, n.host,
                         n.van_address, n.pid);
}

// assign_ranks must refuse `nodes` with a config error that says each of `messages`.
void expect_refused(std::vector<NodeInfo> nodes, int num_servers, int num_workers,
                    std::initializer_list<std::string> messages) {
  try {
    assign_ranks(nodes, num_servers, num_workers);
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG) << what;
    for (const std::string& m : messages)
      EXPECT_NE(what.find(m), std::string::npos) << "missing '" << m << "' in: " << what;
    return;
  }
  ADD_FAILURE() << "accepted nodes that should be refused for " << *messages.begin();
}

TEST(NodeInfo, RegisterRoundTrip) {
  NodeInfo n = node(Role::kServer, "10.0.0.5", "tcp://10.0.0.5:4242", 3, 4711);
  n.id = 14;
  n.rank = 3;
  EXPECT_EQ(fields(decode_register(encode_register(n))), fields(n));

  NodeInfo empty;  // empty strings and negative numbers
  empty.role = Role::kScheduler;
  empty.id = -1;
  EXPECT_EQ(fields(decode_register(encode_register(empty))), fields(empty));
}

TEST(NodeInfo, RegisterCarriesSettings) {
  NodeInfo n = node(Role::kWorker, "h", "tcp://h:1");
  n.settings = {{"DMLC_NUM_WORKER", "2"}, {"van", "zmq"}, {"BYTEPS_PARTITION_BYTES", ""}};
  EXPECT_EQ(decode_register(encode_register(n)).settings, n.settings);
  // The node alone, without the settings' count, is malformed: it would
  // parse into a body that encodes differently (control_fuzz found it), and
  // the builds that sent it speak wire format 5, refused at the header.
  NodeInfo bare = node(Role::kWorker, "h", "tcp://h:1");
  std::vector<uint8_t> body = encode_register(bare);
  body.resize(body.size() - sizeof(uint64_t));
  EXPECT_THROW(decode_register(body), std::runtime_error);
}

TEST(NodeInfo, NodeTableRoundTrip) {
  std::vector<NodeInfo> nodes = {
      node(Role::kScheduler, "head", ""),
      node(Role::kServer, "10.0.0.2", "tcp://10.0.0.2:1", 0, 1),
      node(Role::kWorker, "10.0.0.3", std::string(300, 'a'), -1, 2),
  };
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i].id = static_cast<int>(i) * 7;
  auto out = decode_node_table(encode_node_table(nodes));
  ASSERT_EQ(out.size(), nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i)
    EXPECT_EQ(fields(out[i]), fields(nodes[i])) << "node " << i;
  EXPECT_TRUE(decode_node_table(encode_node_table({})).empty());
}

TEST(NodeInfo, TruncatedBodiesThrow) {
  NodeInfo n = node(Role::kWorker, "host", "tcp://host:1", 0, 9);
  n.settings = {{"DMLC_NUM_WORKER", "2"}};
  auto reg = encode_register(n);
  for (size_t len = 0; len < reg.size(); ++len) {
    std::vector<uint8_t> cut(reg.begin(), reg.begin() + len);
    EXPECT_THROW(decode_register(cut), std::runtime_error) << len << " bytes";
  }
  auto table = encode_node_table({node(Role::kWorker, "h", "a"), node(Role::kServer, "h", "b")});
  for (size_t len = 0; len < table.size(); ++len) {
    std::vector<uint8_t> cut(table.begin(), table.begin() + len);
    EXPECT_THROW(decode_node_table(cut), std::runtime_error) << len << " bytes";
  }
}

TEST(NodeInfo, GarbageBodiesThrow) {
  auto reg = encode_register(node(Role::kWorker, "host", "addr"));
  auto trailing = reg;
  trailing.push_back(0);
  EXPECT_THROW(decode_register(trailing), std::runtime_error);

  auto bad_role = reg;
  bad_role[4] = 7;  // the role byte follows the 4-byte id
  EXPECT_THROW(decode_register(bad_role), std::runtime_error);

  std::vector<uint8_t> noise(64, 0xFF);  // huge string lengths, huge counts
  EXPECT_THROW(decode_register(noise), std::runtime_error);
  EXPECT_THROW(decode_node_table(noise), std::runtime_error);

  wire::Writer lying;  // claims a million nodes, carries none
  lying.u64(1000000);
  EXPECT_THROW(decode_node_table(lying.bytes()), std::runtime_error);

  wire::Writer absurd;
  absurd.u64(UINT64_MAX);
  EXPECT_THROW(decode_node_table(absurd.bytes()), std::runtime_error);
}

TEST(NodeInfo, IdsFollowPsLite) {
  EXPECT_EQ(kSchedulerId, 1);
  EXPECT_EQ(server_id(0), 8);
  EXPECT_EQ(server_id(3), 14);
  EXPECT_EQ(worker_id(0), 9);
  EXPECT_EQ(worker_id(3), 15);
}

TEST(AssignRanks, FillsByHostAndAddress) {
  std::vector<NodeInfo> nodes = {
      node(Role::kWorker, "b", "tcp://b:1"), node(Role::kServer, "b", "tcp://b:2"),
      node(Role::kWorker, "a", "tcp://a:2"), node(Role::kScheduler, "a", ""),
      node(Role::kWorker, "a", "tcp://a:1"), node(Role::kServer, "a", "tcp://a:9"),
  };
  assign_ranks(nodes, 2, 3);
  EXPECT_EQ(nodes[4].rank, 0);  // worker a, tcp://a:1
  EXPECT_EQ(nodes[2].rank, 1);  // worker a, tcp://a:2
  EXPECT_EQ(nodes[0].rank, 2);  // worker b
  EXPECT_EQ(nodes[5].rank, 0);  // server a
  EXPECT_EQ(nodes[1].rank, 1);  // server b
  EXPECT_EQ(nodes[4].id, 9);
  EXPECT_EQ(nodes[2].id, 11);
  EXPECT_EQ(nodes[0].id, 13);
  EXPECT_EQ(nodes[5].id, 8);
  EXPECT_EQ(nodes[1].id, 10);
  EXPECT_EQ(nodes[3].rank, -1) << "the scheduler takes no rank";
}

TEST(AssignRanks, DoesNotDependOnArrivalOrder) {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 6; ++i)
    nodes.push_back(node(Role::kWorker, "h" + std::to_string(i % 3), "addr" + std::to_string(i)));
  auto reversed = std::vector<NodeInfo>(nodes.rbegin(), nodes.rend());
  assign_ranks(nodes, 0, 6);
  assign_ranks(reversed, 0, 6);
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i].rank, reversed[nodes.size() - 1 - i].rank);
    EXPECT_EQ(nodes[i].id, reversed[nodes.size() - 1 - i].id);
  }
}

TEST(AssignRanks, PreferredRanksAreHonoured) {
  std::vector<NodeInfo> nodes = {
      node(Role::kWorker, "a", "1"),    node(Role::kWorker, "z", "1", 0),
      node(Role::kWorker, "b", "1"),    node(Role::kWorker, "c", "1", 2),
      node(Role::kServer, "s", "1", 1), node(Role::kServer, "t", "1"),
  };
  assign_ranks(nodes, 2, 4);
  EXPECT_EQ(nodes[1].rank, 0);
  EXPECT_EQ(nodes[3].rank, 2);
  EXPECT_EQ(nodes[0].rank, 1);  // the free ranks 1 and 3 in (host, address) order
  EXPECT_EQ(nodes[2].rank, 3);
  EXPECT_EQ(nodes[4].rank, 1);
  EXPECT_EQ(nodes[5].rank, 0);
  EXPECT_EQ(nodes[1].id, worker_id(0));
  EXPECT_EQ(nodes[4].id, server_id(1));
}

TEST(AssignRanks, DuplicatePreferredRankNamesBothNodes) {
  expect_refused({node(Role::kWorker, "10.0.0.1", "tcp://10.0.0.1:5", 1, 111),
                  node(Role::kWorker, "10.0.0.2", "tcp://10.0.0.2:5", 1, 222)},
                 1, 2, {"DMLC_WORKER_ID=1", "pid 111 at 10.0.0.1", "pid 222 at 10.0.0.2"});
}

TEST(AssignRanks, DuplicateServerIdIsNamed) {
  expect_refused({node(Role::kServer, "x", "1", 0, 1), node(Role::kServer, "y", "1", 0, 2)}, 2, 0,
                 {"CARAVAN_SERVER_ID=0"});
}

TEST(AssignRanks, OutOfRangePreferredRank) {
  expect_refused({node(Role::kWorker, "a", "1", 2, 5), node(Role::kWorker, "b", "1")}, 1, 2,
                 {"DMLC_WORKER_ID=2", "0..1", "pid 5"});
}

TEST(NodeInfo, Describe) {
  NodeInfo n = node(Role::kWorker, "10.0.0.5", "", -1, 42);
  n.rank = 1;
  EXPECT_EQ(n.describe(), "worker 1 (pid 42 at 10.0.0.5)");
  n.van_address = "tcp://10.0.0.5:7";
  EXPECT_EQ(n.describe(), "worker 1 (pid 42 at 10.0.0.5, tcp://10.0.0.5:7)");
}

}  // namespace
}  // namespace caravan
