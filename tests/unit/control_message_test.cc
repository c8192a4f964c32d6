// The control channel's parsers: FrameReader cutting a byte stream into
// messages, and parse_control_message checking each before any handler
// sees it.
#include "engine/control/control_message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/control/frame_reader.h"
#include "engine/control/node_info.h"
#include "tests/support/control_frame.h"

namespace caravan {
namespace {

using Bytes = std::vector<uint8_t>;

using test::control_frame;

NodeInfo worker(const std::string& address) {
  NodeInfo n;
  n.role = Role::kWorker;
  n.host = "127.0.0.1";
  n.van_address = address;
  n.pid = 7;
  return n;
}

TEST(FrameReader, CutsAStreamFedOneByteAtATime) {
  Bytes stream = control_frame(wire::Type::kRegister, encode_register(worker("tcp://127.0.0.1:1")));
  Bytes beat = control_frame(wire::Type::kHeartbeat, {});
  stream.insert(stream.end(), beat.begin(), beat.end());
  FrameReader r(1 << 20);
  std::vector<wire::Type> got;
  for (uint8_t byte : stream) {
    r.append(&byte, 1);
    wire::Header h;
    Bytes body;
    std::string why;
    FrameReader::Next next;
    while ((next = r.next(&h, &body, &why)) == FrameReader::Next::kMessage) {
      EXPECT_EQ(body.size(), h.seg_len[0]);
      got.push_back(h.type);
    }
    ASSERT_EQ(next, FrameReader::Next::kNeedMore) << why;
  }
  EXPECT_EQ(got, (std::vector<wire::Type>{wire::Type::kRegister, wire::Type::kHeartbeat}));
  EXPECT_EQ(r.buffered(), 0u);
}

// The first frame a FrameReader holding at most `limit` bytes makes of `stream`.
struct FirstFrame {
  FrameReader::Next next;
  wire::Header head;
  Bytes body;
  std::string why;
};

FirstFrame first_frame(const Bytes& stream, size_t limit = 1 << 20) {
  FrameReader r(limit);
  r.append(stream.data(), stream.size());
  FirstFrame f;
  f.next = r.next(&f.head, &f.body, &f.why);
  return f;
}

// What the FrameReader must refuse as soon as `stream` arrives: its reason.
std::string malformed(const Bytes& stream, size_t limit = 1 << 20) {
  FirstFrame f = first_frame(stream, limit);
  EXPECT_EQ(f.next, FrameReader::Next::kMalformed);
  return f.why;
}

// A wire header with no body after it.
Bytes header_alone(const wire::Header& h) {
  Bytes b(wire::kHeaderBytes);
  wire::encode(h, b.data());
  return b;
}

TEST(FrameReader, RefusesAStrangerOnItsFirstWrongByte) {
  std::string why = malformed({'G'});  // of "GET "
  EXPECT_NE(why.find("bad magic"), std::string::npos) << why;
}

TEST(FrameReader, RefusesAnOversizedBodyBeforeItArrives) {
  wire::Header h;
  h.type = wire::Type::kRegister;
  h.seg_len[0] = 3ull << 30;  // claims 3 GiB
  std::string why = malformed(header_alone(h), 16 << 20);
  EXPECT_NE(why.find("3221225472"), std::string::npos) << why;
}

TEST(FrameReader, RefusesDataSegmentsOnTheControlChannel) {
  wire::Header h;
  h.type = wire::Type::kHeartbeat;
  h.seg_len[2] = 4;
  std::string why = malformed(header_alone(h));
  EXPECT_NE(why.find("must be empty"), std::string::npos) << why;
}

TEST(FrameReader, DescribesAMessageCutShort) {
  Bytes b = control_frame(wire::Type::kAbort, Bytes(500, 'x'));
  FrameReader r(1 << 20);
  r.append(b.data(), 30);
  EXPECT_EQ(r.describe_partial(), "30 of 72 header bytes");
  r.append(b.data() + 30, 52);
  EXPECT_EQ(r.describe_partial(), "10 of 500 body bytes");
}

// A well-framed message that `side` must refuse: its reason.
std::string refusal(ControlReceiver side, const Bytes& stream) {
  FirstFrame f = first_frame(stream);
  EXPECT_EQ(f.next, FrameReader::Next::kMessage) << f.why;
  ControlMessage msg;
  std::string why;
  EXPECT_FALSE(parse_control_message(side, f.head, f.body, &msg, &why));
  EXPECT_FALSE(why.empty());
  return why;
}

TEST(ControlMessage, ParsesWhatEachSideExpects) {
  NodeInfo n = worker("tcp://127.0.0.1:5");
  n.preferred_rank = 1;
  wire::Header h;
  h.type = wire::Type::kRegister;
  ControlMessage msg;
  std::string why;
  ASSERT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, encode_register(n), &msg, &why))
      << why;
  EXPECT_EQ(msg.node.van_address, "tcp://127.0.0.1:5");
  EXPECT_EQ(msg.node.preferred_rank, 1);
  EXPECT_EQ(control_body(msg), encode_register(n));

  h.type = wire::Type::kBarrier;
  h.cmd = kServerGroup + kWorkerGroup;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {}, &msg, &why)) << why;
  h.type = wire::Type::kAbort;
  h.cmd = 0;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {'n', 'o'}, &msg, &why)) << why;
  EXPECT_EQ(msg.text, "no");
  // From a node: it ends the job, saying why.
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {'n', 'o'}, &msg, &why)) << why;
  EXPECT_EQ(msg.text, "no");
}

// A scheduler taking a job over learns from each REPORT which barriers the
// node passed (key -1: the shutdown barrier).
TEST(ControlMessage, AReportCarriesTheBarriersPassed) {
  NodeInfo n = worker("tcp://127.0.0.1:5");
  n.id = worker_id(0);
  ControlMessage report;
  report.head.type = wire::Type::kReport;
  report.head.sender = n.id;
  report.table = {n};
  report.barriers = {{-1, 0}, {kWorkerGroup, 3}};
  ControlMessage msg;
  std::string why;
  ASSERT_TRUE(parse_control_message(ControlReceiver::kScheduler, report.head, control_body(report),
                                    &msg, &why))
      << why;
  EXPECT_EQ(msg.barriers, report.barriers);
  ASSERT_EQ(msg.table.size(), 1u);
  EXPECT_EQ(msg.table[0].van_address, "tcp://127.0.0.1:5");
  for (int k = 0; k <= kMaxReportedBarrierKeys; ++k) report.barriers[100 + k] = 1;
  EXPECT_FALSE(parse_control_message(ControlReceiver::kScheduler, report.head, control_body(report),
                                     &msg, &why));
  EXPECT_NE(why.find("barrier keys (at most"), std::string::npos) << why;
}

TEST(ControlMessage, RefusesMessagesForTheOtherSide) {
  EXPECT_NE(refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kBarrierDone, {}, 6))
                .find("BARRIER_DONE message does not belong on the scheduler's end"),
            std::string::npos);
  // A node's ABORT ends the job; it cannot refuse the scheduler.
  EXPECT_NE(
      refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kAbort, {}, kAbortRefused))
          .find("an ABORT of kind 1 from a node"),
      std::string::npos);
  EXPECT_NE(refusal(ControlReceiver::kNode, control_frame(wire::Type::kBarrier, {}, 6))
                .find("BARRIER message does not belong on the node's end"),
            std::string::npos);
  EXPECT_NE(
      refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kKV, {})).find("KV message"),
      std::string::npos);
  EXPECT_NE(
      refusal(ControlReceiver::kNode, control_frame(wire::Type::kProbe, {})).find("PROBE message"),
      std::string::npos);
}

TEST(ControlMessage, RefusesMalformedBodies) {
  Bytes reg = encode_register(worker("tcp://127.0.0.1:5"));
  reg.pop_back();
  std::string why = refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kRegister, reg));
  EXPECT_NE(why.find("malformed REGISTER body"), std::string::npos) << why;
  why = refusal(ControlReceiver::kScheduler,
                control_frame(wire::Type::kRegister, encode_register(worker(""))));
  EXPECT_NE(why.find("without a van address"), std::string::npos) << why;
  NodeInfo bad_rank = worker("tcp://127.0.0.1:5");
  bad_rank.preferred_rank = -5;
  why = refusal(ControlReceiver::kScheduler,
                control_frame(wire::Type::kRegister, encode_register(bad_rank)));
  EXPECT_NE(why.find("negative"), std::string::npos) << why;
  NodeInfo second = worker("tcp://127.0.0.1:5");
  second.role = Role::kScheduler;
  why = refusal(ControlReceiver::kScheduler,
                control_frame(wire::Type::kRegister, encode_register(second)));
  EXPECT_NE(why.find("second scheduler"), std::string::npos) << why;
  why = refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kHeartbeat, {1, 2, 3}));
  EXPECT_NE(why.find("body of 3 bytes"), std::string::npos) << why;
}

TEST(ControlMessage, AuthMessagesHaveTheirSizesAndTheirSide) {
  // A scheduler's proof carries the job nonce too; a node's only the HMAC.
  wire::Header h;
  h.type = wire::Type::kAuthProof;
  ControlMessage msg;
  std::string why;
  EXPECT_TRUE(
      parse_control_message(ControlReceiver::kNode, h, Bytes(kSchedulerProofBytes, 1), &msg, &why))
      << why;
  EXPECT_EQ(control_body(msg), Bytes(kSchedulerProofBytes, 1));
  EXPECT_TRUE(
      parse_control_message(ControlReceiver::kScheduler, h, Bytes(kNodeProofBytes, 1), &msg, &why))
      << why;
  why = refusal(ControlReceiver::kScheduler,
                control_frame(wire::Type::kAuthProof, Bytes(kSchedulerProofBytes, 1)));
  EXPECT_NE(why.find("AUTH_PROOF message with a body of 64 bytes (it carries 32)"),
            std::string::npos)
      << why;
  why = refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kAuthHello, Bytes(31, 1)));
  EXPECT_NE(why.find("AUTH_HELLO message with a body of 31 bytes"), std::string::npos) << why;
  why = refusal(ControlReceiver::kScheduler,
                control_frame(wire::Type::kAuthChallenge, Bytes(kAuthNonceBytes, 1)));
  EXPECT_NE(why.find("AUTH_CHALLENGE message does not belong on the scheduler's end"),
            std::string::npos)
      << why;
  why = refusal(ControlReceiver::kNode,
                control_frame(wire::Type::kAuthHello, Bytes(kAuthNonceBytes, 1)));
  EXPECT_NE(why.find("AUTH_HELLO message does not belong on the node's end"), std::string::npos)
      << why;
}

TEST(ControlMessage, AnAbortEndsTheJobOrRefusesOneNode) {
  wire::Header h;
  h.type = wire::Type::kAbort;
  h.cmd = kAbortRefused;
  ControlMessage msg;
  std::string why;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {'n', 'o'}, &msg, &why)) << why;
  h.cmd = kAbortNotNeeded;  // after a suspend: the job resumed without this server
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {'n', 'o'}, &msg, &why)) << why;
  // CARAVAN_ELASTIC: the job regroups, and each node answers in kind.
  h.cmd = kAbortRegroup;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {'n', 'o'}, &msg, &why)) << why;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {}, &msg, &why)) << why;
  // A node found lost learns that the job went on without it.
  h.cmd = kAbortLeftOut;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {'n', 'o'}, &msg, &why)) << why;
  why = refusal(ControlReceiver::kNode, control_frame(wire::Type::kAbort, {}, 5));
  EXPECT_NE(why.find("an ABORT of kind 5"), std::string::npos) << why;
  // And a node leaving tells the scheduler so in kind.
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {'n', 'o'}, &msg, &why)) << why;
  // Only a scheduler tells a node it is not needed.
  why =
      refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kAbort, {}, kAbortNotNeeded));
  EXPECT_NE(why.find("from a node"), std::string::npos) << why;
}

TEST(ControlMessage, OnlyTheShutdownBarrierSuspends) {
  wire::Header h;
  h.type = wire::Type::kBarrier;
  h.cmd = kServerGroup + kWorkerGroup;
  h.flags = wire::kFinal | wire::kSuspend;
  ControlMessage msg;
  std::string why;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {}, &msg, &why)) << why;
  h.type = wire::Type::kBarrierDone;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kNode, h, {}, &msg, &why)) << why;
  h.flags = wire::kSuspend;  // an ordinary barrier cannot
  EXPECT_FALSE(parse_control_message(ControlReceiver::kNode, h, {}, &msg, &why));
  EXPECT_NE(why.find("suspend flag"), std::string::npos) << why;
  h.type = wire::Type::kBarrier;
  EXPECT_FALSE(parse_control_message(ControlReceiver::kScheduler, h, {}, &msg, &why));
}

TEST(ControlMessage, RefusesBarrierGroupsThatDoNotExist) {
  for (int group : {0, 8, -1, 1 << 30}) {
    std::string why =
        refusal(ControlReceiver::kScheduler, control_frame(wire::Type::kBarrier, {}, group));
    EXPECT_NE(why.find("node group " + std::to_string(group)), std::string::npos) << why;
  }
  // The shutdown barrier ignores its group, which may then be 0.
  wire::Header h;
  h.type = wire::Type::kBarrier;
  h.flags = wire::kFinal;
  ControlMessage msg;
  std::string why;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, h, {}, &msg, &why)) << why;
}

// The question (kRequest, no body) goes to the scheduler; the answer, the
// names of the nodes not yet there, to a node. Either the wrong way round
// is refused, as is a question with a body.
TEST(ControlMessage, BarrierWaitingAsksTheSchedulerAndAnswersANode) {
  wire::Header ask;
  ask.type = wire::Type::kBarrierWaiting;
  ask.flags = wire::kRequest;
  ask.cmd = 6;
  ControlMessage msg;
  std::string why;
  EXPECT_TRUE(parse_control_message(ControlReceiver::kScheduler, ask, {}, &msg, &why)) << why;
  EXPECT_FALSE(parse_control_message(ControlReceiver::kNode, ask, {}, &msg, &why));
  EXPECT_NE(why.find("a BARRIER_WAITING question sent to a node"), std::string::npos) << why;
  EXPECT_FALSE(parse_control_message(ControlReceiver::kScheduler, ask, {1}, &msg, &why));
  EXPECT_NE(why.find("a body of 1 bytes"), std::string::npos) << why;

  wire::Header answer = ask;
  answer.flags = wire::kFinal;
  answer.cmd = 0;
  std::string text = "1 node(s) that have not arrived: worker 0";
  ASSERT_TRUE(parse_control_message(ControlReceiver::kNode, answer, Bytes(text.begin(), text.end()),
                                    &msg, &why))
      << why;
  EXPECT_EQ(msg.text, text);
  EXPECT_EQ(control_body(msg), Bytes(text.begin(), text.end()));
  EXPECT_FALSE(parse_control_message(ControlReceiver::kScheduler, answer, {}, &msg, &why));
  EXPECT_NE(why.find("a BARRIER_WAITING answer sent to a scheduler"), std::string::npos) << why;
  answer.flags = 0;  // not the shutdown barrier: the group must be one
  EXPECT_FALSE(parse_control_message(ControlReceiver::kNode, answer, {}, &msg, &why));
  EXPECT_NE(why.find("node group 0"), std::string::npos) << why;
}

}  // namespace
}  // namespace caravan
