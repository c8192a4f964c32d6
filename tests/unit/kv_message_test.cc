// A data-plane message as a van delivers it: decode_kv_message, then the
// summation server's checks in parse_push_pull_request.
#include "engine/kv/kv_message.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "engine/control/node_info.h"
#include "engine/server/push_pull_request.h"

namespace caravan {
namespace {

// A received message: the header and three segments laid out in one
// buffer from `offset` on, as a van that packs segments might.
struct Received {
  std::vector<uint8_t> bytes;
  caravan_recv_segment_v2 segs[4];

  Received(wire::Header h, const std::vector<uint8_t>& keys, const std::vector<uint8_t>& vals,
           size_t offset = 0) {
    h.seg_len[0] = keys.size();
    h.seg_len[1] = vals.size();
    bytes.assign(offset + wire::kHeaderBytes + keys.size() + vals.size(), 0);
    uint8_t* p = bytes.data() + offset;
    wire::encode(h, p);
    // std::copy: an empty vector's data() may be null, which memcpy forbids.
    std::copy(keys.begin(), keys.end(), p + wire::kHeaderBytes);
    std::copy(vals.begin(), vals.end(), p + wire::kHeaderBytes + keys.size());
    segs[0] = {p, wire::kHeaderBytes};
    segs[1] = {p + wire::kHeaderBytes, keys.size()};
    segs[2] = {p + wire::kHeaderBytes + keys.size(), vals.size()};
    segs[3] = {nullptr, 0};
  }
};

wire::Header push_pull(int sender) {
  wire::Header h;
  h.type = wire::Type::kKV;
  h.flags = wire::kRequest | wire::kPush | wire::kPull;
  h.sender = sender;
  h.recipient = server_id(0);
  h.dtype = CARAVAN_FLOAT32;
  return h;
}

std::vector<uint8_t> key(uint64_t k) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &k, 8);
  return b;
}

TEST(KVMessage, DecodesAndChecksAPushPull) {
  Received r(push_pull(worker_id(1)), key(0x0102030405060708ull), std::vector<uint8_t>(16, 1));
  KVMessage m;
  std::string why;
  ASSERT_TRUE(decode_kv_message(r.segs, 4, server_id(0), &m, &why)) << why;
  PushPullRequest req;
  ASSERT_TRUE(parse_push_pull_request(m, 2, &req, &why)) << why;
  EXPECT_EQ(req.rank, 1);
  EXPECT_EQ(req.key, 0x0102030405060708ull);
  EXPECT_EQ(req.count, 4u);
}

TEST(KVMessage, RefusesSegmentsThatDisagreeWithTheHeader) {
  Received r(push_pull(worker_id(0)), key(1), std::vector<uint8_t>(16, 1));
  r.segs[2].len = 8;  // the header still says 16
  KVMessage m;
  std::string why;
  EXPECT_FALSE(decode_kv_message(r.segs, 4, server_id(0), &m, &why));
  EXPECT_NE(why.find("segment 2 has 8 bytes, the header declares 16"), std::string::npos) << why;
  EXPECT_FALSE(decode_kv_message(r.segs, 3, server_id(0), &m, &why));
  EXPECT_NE(why.find("3 segments, expected 4"), std::string::npos) << why;
}

TEST(KVMessage, RefusesAMessageForAnotherNode) {
  Received r(push_pull(worker_id(0)), key(1), std::vector<uint8_t>(16, 1));
  KVMessage m;
  std::string why;
  EXPECT_FALSE(decode_kv_message(r.segs, 4, server_id(1), &m, &why));
  EXPECT_NE(why.find("addressed to node 8, this is node 10"), std::string::npos) << why;
}

// A start-up probe carries only its header; like a KV message it must be
// addressed to this node.
TEST(KVMessage, DecodesAProbeAddressedToThisNode) {
  wire::Header h;
  h.type = wire::Type::kProbe;
  h.flags = wire::kRequest;
  h.sender = worker_id(0);
  h.recipient = server_id(1);
  Received r(h, {}, {});
  KVMessage m;
  std::string why;
  ASSERT_TRUE(decode_kv_message(r.segs, 4, server_id(1), &m, &why)) << why;
  EXPECT_EQ(m.head.type, wire::Type::kProbe);
  EXPECT_FALSE(decode_kv_message(r.segs, 4, server_id(0), &m, &why));
  EXPECT_NE(why.find("addressed to node " + std::to_string(server_id(1))), std::string::npos)
      << why;
}

// Regression (kv_fuzz): the rank was computed as (sender - 9) / 2 before
// the sender was checked, a signed overflow for a sender near INT_MIN.
TEST(PushPullRequest, RefusesSendersThatAreNoWorkerWithoutOverflow) {
  for (int sender : {INT_MIN, INT_MIN + 8, -1, 0, 8, server_id(0), worker_id(2), INT_MAX}) {
    Received r(push_pull(sender), key(1), std::vector<uint8_t>(16, 1));
    KVMessage m;
    std::string why;
    ASSERT_TRUE(decode_kv_message(r.segs, 4, server_id(0), &m, &why)) << why;
    PushPullRequest req;
    EXPECT_FALSE(parse_push_pull_request(m, 2, &req, &why)) << sender;
    EXPECT_NE(why.find("node " + std::to_string(sender) + " is not a worker"), std::string::npos)
        << why;
  }
}

// Regression (kv_fuzz, under UBSan): the key was loaded through a
// uint64_t pointer, but the van ABI promises no alignment.
TEST(PushPullRequest, ReadsAKeyAtAnUnalignedAddress) {
  for (size_t offset = 1; offset < 8; ++offset) {
    Received r(push_pull(worker_id(0)), key(0xA1B2C3D4E5F60718ull), std::vector<uint8_t>(8, 1),
               offset);
    KVMessage m;
    std::string why;
    ASSERT_TRUE(decode_kv_message(r.segs, 4, server_id(0), &m, &why)) << why;
    PushPullRequest req;
    ASSERT_TRUE(parse_push_pull_request(m, 1, &req, &why)) << why;
    EXPECT_EQ(req.key, 0xA1B2C3D4E5F60718ull) << "offset " << offset;
  }
}

TEST(PushPullRequest, RefusesValuesThatAreNoWholeNumberOfElements) {
  wire::Header h = push_pull(worker_id(0));
  h.dtype = CARAVAN_FLOAT64;
  Received r(h, key(1), std::vector<uint8_t>(12, 1));
  KVMessage m;
  std::string why;
  ASSERT_TRUE(decode_kv_message(r.segs, 4, server_id(0), &m, &why)) << why;
  PushPullRequest req;
  EXPECT_FALSE(parse_push_pull_request(m, 1, &req, &why));
  EXPECT_NE(why.find("dtype 1 with 12 value bytes"), std::string::npos) << why;
  h.dtype = 200;
  Received r2(h, key(1), std::vector<uint8_t>(8, 1));
  ASSERT_TRUE(decode_kv_message(r2.segs, 4, server_id(0), &m, &why)) << why;
  EXPECT_FALSE(parse_push_pull_request(m, 1, &req, &why));
}

}  // namespace
}  // namespace caravan
