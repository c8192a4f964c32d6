// CARAVAN_JOB_TOKEN without sockets: the HMAC against a published test
// vector, the variable itself, the control channel's challenge-response
// driven from both ends, and the data plane's seals, each with the
// forgeries, replays and reflections a stranger could try.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/base/job_token.h"
#include "engine/control/control_auth.h"
#include "engine/kv/message_seal.h"
#include "engine/wire/header.h"
#include "tests/unit/env_guard.h"

namespace caravan {
namespace {

using Bytes = std::vector<uint8_t>;

std::string hex(const auth::Mac& m) {
  std::string s;
  char b[3];
  for (uint8_t x : m) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

// RFC 4231, test case 2: libcrypto is called the way HMAC-SHA256 means.
TEST(HmacSha256, MatchesRfc4231TestCase2) {
  auth::HmacSha256 h("Jefe", 4);
  const char data[] = "what do ya want for nothing?";
  // Twice: each MAC starts over under the same key.
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(hex(h.mac({{data, 14}, {data + 14, sizeof data - 1 - 14}})),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(JobTokenEnv, UnsetMeansNoTokenAndEmptyIsAConfigError) {
  test::EnvGuard env;
  env.unset("CARAVAN_JOB_TOKEN");
  EXPECT_EQ(auth::JobToken::from_env(), nullptr);
  env.set("CARAVAN_JOB_TOKEN", "");
  try {
    auth::JobToken::from_env();
    FAIL() << "an empty CARAVAN_JOB_TOKEN was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find("CARAVAN_JOB_TOKEN is set but empty"), std::string::npos)
        << e.what();
  }
  env.set("CARAVAN_JOB_TOKEN", "s3cret");
  EXPECT_NE(auth::JobToken::from_env(), nullptr);
}

TEST(JobTokenDerivations, NoncesAreFreshAndDerivationsAreSeparate) {
  EXPECT_NE(auth::fresh_nonce(), auth::fresh_nonce());
  auth::JobToken t("s3cret");
  auth::Nonce a = auth::fresh_nonce(), b = auth::fresh_nonce();
  EXPECT_NE(t.node_proof(a, b), t.node_proof(b, a));
  EXPECT_NE(t.data_key(a, 9, 8), t.data_key(a, 8, 9));
  EXPECT_NE(t.data_key(a, 9, 8), t.data_key(b, 9, 8));
  EXPECT_NE(t.node_proof(a, b), auth::JobToken("s3cret!").node_proof(a, b));
}

// --- The control channel ---

std::shared_ptr<const auth::JobToken> token(const std::string& s) {
  return std::make_shared<const auth::JobToken>(s);
}

ControlMessage registration() {
  ControlMessage m;
  m.head.type = wire::Type::kRegister;
  return m;
}

// What a message looks like after the trip: encoded, parsed by the receiver.
ControlMessage carried(const ControlMessage& m, ControlReceiver to) {
  ControlMessage out;
  std::string why;
  EXPECT_TRUE(parse_control_message(to, m.head, control_body(m), &out, &why)) << why;
  return out;
}

struct Handshake {
  AuthResponder::Step last;
  std::optional<AuthInitiator::Step> node_end;
};

// Runs the challenge between `scheduler` (connection `conn`) and `node`.
Handshake run(AuthResponder& scheduler, int conn, AuthInitiator& node) {
  Handshake h;
  ControlMessage next = node.hello();
  for (int turn = 0; turn < 4; ++turn) {
    h.last = scheduler.on_message(conn, carried(next, ControlReceiver::kScheduler));
    if (h.last.outcome == AuthResponder::Step::kRefuse || !h.last.reply) return h;
    h.node_end = node.on_message(carried(*h.last.reply, ControlReceiver::kNode));
    if (h.node_end->done || !h.node_end->error.empty() || !h.node_end->reply) return h;
    next = *h.node_end->reply;
  }
  ADD_FAILURE() << "the challenge did not end";
  return h;
}

TEST(ControlAuth, SameTokenAdmitsBothWaysAndAgreesOnTheJobNonce) {
  AuthResponder scheduler(token("s3cret"));
  AuthInitiator node(token("s3cret"));
  Handshake h = run(scheduler, 3, node);
  EXPECT_EQ(h.last.outcome, AuthResponder::Step::kAdmit);
  EXPECT_FALSE(h.last.deliver);
  EXPECT_TRUE(scheduler.admitted(3));
  ASSERT_TRUE(h.node_end && h.node_end->done) << (h.node_end ? h.node_end->error : "");
  EXPECT_EQ(node.job_nonce(), scheduler.job_nonce());
}

TEST(ControlAuth, WrongTokenIsRefusedBeforeTheSchedulerProvesAnything) {
  AuthResponder scheduler(token("s3cret"));
  AuthInitiator node(token("guess"));
  Handshake h = run(scheduler, 3, node);
  EXPECT_EQ(h.last.outcome, AuthResponder::Step::kRefuse);
  EXPECT_FALSE(h.last.reply) << "the scheduler answered a wrong proof with a proof of its own";
  EXPECT_NE(h.last.why.find("wrong CARAVAN_JOB_TOKEN"), std::string::npos) << h.last.why;
  EXPECT_NE(h.last.tell.find("wrong CARAVAN_JOB_TOKEN"), std::string::npos) << h.last.tell;
  EXPECT_FALSE(scheduler.admitted(3));
}

TEST(ControlAuth, MissingTokenOnEitherSideIsNamed) {
  AuthResponder with(token("s3cret"));
  auto s = with.on_message(1, registration());
  EXPECT_EQ(s.outcome, AuthResponder::Step::kRefuse);
  EXPECT_NE(s.why.find("missing CARAVAN_JOB_TOKEN (its first message is REGISTER"),
            std::string::npos)
      << s.why;
  EXPECT_NE(s.tell.find("requires CARAVAN_JOB_TOKEN"), std::string::npos) << s.tell;

  AuthResponder without(nullptr);
  AuthInitiator node(token("s3cret"));
  s = without.on_message(1, carried(node.hello(), ControlReceiver::kScheduler));
  EXPECT_EQ(s.outcome, AuthResponder::Step::kRefuse);
  EXPECT_NE(s.tell.find("the scheduler has no CARAVAN_JOB_TOKEN"), std::string::npos) << s.tell;
  s = without.on_message(2, registration());
  EXPECT_EQ(s.outcome, AuthResponder::Step::kAdmit);
  EXPECT_TRUE(s.deliver);
}

// A stranger that recorded a whole good exchange plays the node's proof
// again on a new connection: the scheduler's nonce differs, so it fails.
TEST(ControlAuth, ARecordedProofIsWorthlessOnAnotherConnection) {
  AuthResponder scheduler(token("s3cret"));
  AuthInitiator node(token("s3cret"));
  ControlMessage hello = carried(node.hello(), ControlReceiver::kScheduler);
  auto challenge = scheduler.on_message(1, hello);
  auto answer = node.on_message(carried(*challenge.reply, ControlReceiver::kNode));
  ControlMessage recorded = carried(*answer.reply, ControlReceiver::kScheduler);
  EXPECT_EQ(scheduler.on_message(1, recorded).outcome, AuthResponder::Step::kAdmit);

  scheduler.on_message(2, hello);  // the stranger's replayed hello
  auto replay = scheduler.on_message(2, recorded);
  EXPECT_EQ(replay.outcome, AuthResponder::Step::kRefuse);
  EXPECT_NE(replay.why.find("wrong CARAVAN_JOB_TOKEN"), std::string::npos) << replay.why;
}

// The scheduler's proof, sent back to it as a node's, is refused: the two
// are made under different labels.
TEST(ControlAuth, TheSchedulersProofCannotBeReflectedAsANodes) {
  auto t = token("s3cret");
  AuthResponder scheduler(t);
  AuthInitiator node(t);
  ControlMessage hello = carried(node.hello(), ControlReceiver::kScheduler);
  auto challenge = scheduler.on_message(1, hello);
  auth::Nonce ns;
  std::copy_n(challenge.reply->auth.begin(), ns.size(), ns.begin());
  auth::Nonce nn;
  std::copy_n(hello.auth.begin(), nn.size(), nn.begin());
  auth::Mac scheduler_style = t->scheduler_proof(nn, ns, scheduler.job_nonce());
  ControlMessage reflected;
  reflected.head.type = wire::Type::kAuthProof;
  reflected.auth.assign(scheduler_style.begin(), scheduler_style.end());
  EXPECT_EQ(scheduler.on_message(1, reflected).outcome, AuthResponder::Step::kRefuse);
}

TEST(ControlAuth, ANodeRefusesASchedulerThatCannotProveTheToken) {
  AuthResponder impostor(token("other"));
  AuthInitiator node(token("s3cret"));
  // The impostor's end admits nobody; play its side by hand instead.
  ControlMessage hello = carried(node.hello(), ControlReceiver::kScheduler);
  auto challenge = impostor.on_message(1, hello);
  node.on_message(carried(*challenge.reply, ControlReceiver::kNode));
  auth::Nonce nn, ns;
  std::copy_n(hello.auth.begin(), nn.size(), nn.begin());
  std::copy_n(challenge.reply->auth.begin(), ns.size(), ns.begin());
  auth::Mac forged = token("other")->scheduler_proof(nn, ns, impostor.job_nonce());
  ControlMessage proof;
  proof.head.type = wire::Type::kAuthProof;
  proof.auth.assign(forged.begin(), forged.end());
  proof.auth.insert(proof.auth.end(), impostor.job_nonce().begin(), impostor.job_nonce().end());
  auto s = node.on_message(carried(proof, ControlReceiver::kNode));
  EXPECT_FALSE(s.done);
  EXPECT_NE(s.error.find("does not match this node's CARAVAN_JOB_TOKEN"), std::string::npos)
      << s.error;
}

// --- The data plane ---

constexpr int32_t kServer = 8, kWorker0 = 9, kWorker1 = 11;

struct Sent {
  Bytes header, keys, vals, lens;
  MessageSeal::Seal seal{};
  caravan_recv_segment_v2 segs[5];
  size_t count = 5;

  Sent(wire::Header h, Bytes k, Bytes v) : keys(std::move(k)), vals(std::move(v)) {
    h.seg_len[0] = keys.size();
    h.seg_len[1] = vals.size();
    header.resize(wire::kHeaderBytes);
    wire::encode(h, header.data());
  }
  void seal_with(MessageSeal& from, int32_t to) {
    caravan_segment_v2 out[4] = {{header.data(), header.size()},
                                 {keys.data(), keys.size()},
                                 {vals.data(), vals.size()},
                                 {lens.data(), lens.size()}};
    auto lock = from.seal(to, out, &seal);
  }
  const caravan_recv_segment_v2* received() {
    segs[0] = {header.data(), header.size()};
    segs[1] = {keys.data(), keys.size()};
    segs[2] = {vals.data(), vals.size()};
    segs[3] = {lens.data(), lens.size()};
    segs[4] = {seal.data(), seal.size()};
    return segs;
  }
};

wire::Header push(int32_t from, int32_t to, int32_t ts = 1) {
  wire::Header h;
  h.type = wire::Type::kKV;
  h.flags = wire::kRequest | wire::kPush | wire::kPull;
  h.sender = from;
  h.recipient = to;
  h.timestamp = ts;
  return h;
}

struct Job {
  std::shared_ptr<const auth::JobToken> t = token("s3cret");
  auth::Nonce run = auth::fresh_nonce();
  std::vector<int32_t> ids = {kServer, kWorker0, kWorker1};
  MessageSeal server{*t, run, kServer, ids};
  MessageSeal worker0{*t, run, kWorker0, ids};
  MessageSeal worker1{*t, run, kWorker1, ids};
};

bool opens(MessageSeal& at, Sent& m, std::string* why) {
  return at.open(m.received(), m.count, why);
}

TEST(MessageSeal, SealedMessagesOpenInOrderAndEachOnlyOnce) {
  Job job;
  std::string why;
  for (int32_t ts = 1; ts <= 3; ++ts) {
    Sent m(push(kWorker0, kServer, ts), Bytes(8, 1), Bytes(4096, 2));
    m.seal_with(job.worker0, kServer);
    EXPECT_TRUE(opens(job.server, m, &why)) << why;
    EXPECT_FALSE(opens(job.server, m, &why)) << "the same message was accepted twice";
    EXPECT_NE(why.find("a replayed message"), std::string::npos) << why;
  }
  Sent reply(push(kServer, kWorker0), Bytes(8, 1), Bytes(4096, 3));
  reply.seal_with(job.server, kWorker0);
  EXPECT_TRUE(opens(job.worker0, reply, &why)) << why;
}

TEST(MessageSeal, AnAcknowledgementIsCheckedAsFromItsSender) {
  Job job;
  wire::Header ack = push(kWorker0, kServer);  // echoes the worker's request
  ack.type = wire::Type::kAck;
  Sent m(ack, {}, {});
  m.seal_with(job.server, kWorker0);
  std::string why;
  EXPECT_TRUE(opens(job.worker0, m, &why)) << why;
}

TEST(MessageSeal, AStrangersMessagesAreRefusedWithTheReason) {
  Job job;
  std::string why;

  Sent unsealed(push(kWorker0, kServer), Bytes(8, 1), Bytes(16, 2));
  unsealed.count = 4;
  EXPECT_FALSE(opens(job.server, unsealed, &why));
  EXPECT_NE(why.find("it claims to come from node 9 but carries no CARAVAN_JOB_TOKEN seal"),
            std::string::npos)
      << why;

  // Right ids, right job nonce even (a stranger cannot know it), wrong token.
  MessageSeal stranger(auth::JobToken("guess"), job.run, kWorker0, job.ids);
  Sent forged(push(kWorker0, kServer), Bytes(8, 1), Bytes(16, 2));
  forged.seal_with(stranger, kServer);
  EXPECT_FALSE(opens(job.server, forged, &why));
  EXPECT_NE(why.find("its CARAVAN_JOB_TOKEN seal is wrong"), std::string::npos) << why;

  // A node of the job cannot speak for another: worker 1's seal on a
  // message that claims worker 0.
  Sent impersonation(push(kWorker0, kServer), Bytes(8, 1), Bytes(16, 2));
  impersonation.seal_with(job.worker1, kServer);
  EXPECT_FALSE(opens(job.server, impersonation, &why));

  Sent unknown(push(77, kServer), Bytes(8, 1), Bytes(16, 2));
  unknown.seal_with(job.worker0, kServer);
  EXPECT_FALSE(opens(job.server, unknown, &why));
  EXPECT_NE(why.find("node 77, which is no peer"), std::string::npos) << why;
}

TEST(MessageSeal, AnyChangeToHeaderKeysOrTheirSplitBreaksTheSeal) {
  std::string why;
  for (int field = 0; field < 3; ++field) {
    Job job;
    Sent m(push(kWorker0, kServer), Bytes(8, 1), Bytes(16, 2));
    m.seal_with(job.worker0, kServer);
    if (field == 0) m.header[28] ^= 1;  // the timestamp
    if (field == 1) m.keys[0] ^= 1;
    if (field == 2) {
      // The last key byte moved into lens: the sealed bytes, taken end to
      // end, are unchanged; only the sealed lengths tell.
      m.lens.insert(m.lens.begin(), m.keys.back());
      m.keys.pop_back();
    }
    EXPECT_FALSE(opens(job.server, m, &why)) << "field " << field;
    if (field == 2) {
      EXPECT_NE(why.find("the header declares 8"), std::string::npos) << why;
    }
  }
}

// Values are not hashed; a vals segment that holds a shared-memory body
// (kShm: where values lie, or a segment to map) is.
TEST(MessageSeal, ASharedMemoryBodyIsSealedValuesAreNot) {
  std::string why;
  for (bool shm : {false, true}) {
    Job job;
    wire::Header h = push(kWorker0, kServer);
    if (shm) h.flags |= wire::kShm;
    Sent m(h, Bytes(8, 1), Bytes(24, 2));
    m.seal_with(job.worker0, kServer);
    m.vals[0] ^= 1;
    EXPECT_EQ(opens(job.server, m, &why), !shm) << "kShm " << shm << ": " << why;
  }
}

TEST(MessageSeal, AMessageOfAnotherRunOrDirectionIsRefused) {
  Job job, other;
  std::string why;
  Sent old(push(kWorker0, kServer), Bytes(8, 1), Bytes(16, 2));
  old.seal_with(other.worker0, kServer);
  EXPECT_FALSE(opens(job.server, old, &why)) << "a message of another run was accepted";

  // The server's message to worker 0, played back to the server: it comes
  // from the server itself, which is no peer of its own.
  Sent reflected(push(kServer, kWorker0), Bytes(8, 1), Bytes(16, 2));
  reflected.seal_with(job.server, kWorker0);
  EXPECT_FALSE(opens(job.server, reflected, &why));
  // And with sender and recipient swapped, claiming worker 0: the seal was
  // made with the other direction's key.
  wire::Header flipped = push(kWorker0, kServer);
  flipped.seg_len[0] = 8;
  flipped.seg_len[1] = 16;
  wire::encode(flipped, reflected.header.data());
  EXPECT_FALSE(opens(job.server, reflected, &why));
  EXPECT_NE(why.find("seal is wrong"), std::string::npos) << why;
}

}  // namespace
}  // namespace caravan
