// CARAVAN_JOB_TOKEN in a live job of real processes: while two workers
// push_pull, strangers without the token and with a wrong one try the
// scheduler's control port (raw, and as real Caravan workers) and the
// server's van port (data messages with a forged header that claims to be
// worker 0, pushing into the keys the workers use). Each must be refused
// and logged with its address, the real ones must exit non-zero naming
// CARAVAN_JOB_TOKEN within seconds, and the job must sum exactly. Then the
// mismatches of configuration: a token on one side only, and an empty one.
#include "engine/base/job_token.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "caravan/dtype.h"
#include "engine/control/control_message.h"
#include "engine/control/frame_reader.h"
#include "engine/control/node_info.h"
#include "engine/kv/message_seal.h"
#include "engine/wire/header.h"
#include "engine/worker/partition_plan.h"
#include "tests/support/control_frame.h"
#include "tests/support/loopback_job.h"
#include "tests/support/process.h"
#include "tests/support/refusal.h"
#include "tests/support/zmq_stranger.h"

namespace caravan::test {
namespace {

using Bytes = std::vector<uint8_t>;

const char kToken[] = "job-token-test-4f6c1d0e9b2a";
// Generous for a loaded machine, far below CARAVAN_CONNECT_TIMEOUT below:
// a refused node must not wait for the start-up deadline.
constexpr double kRefusalDeadline = 10;
constexpr int kConnectTimeout = 60;
constexpr double kStartDeadline = 30;

// A stranger on the scheduler's control port that speaks the control
// protocol, with whatever token it likes.
class ControlStranger {
 public:
  explicit ControlStranger(int port) : raw_(port) {}

  bool connected() const { return raw_.connected(); }
  const std::string& address() const { return raw_.address(); }

  void send(wire::Type type, const Bytes& body) { raw_.send(control_frame(type, body)); }

  // The next message from the scheduler; false at EOF or the deadline.
  bool receive(ControlMessage* out, double timeout_s) {
    double deadline = now_s() + timeout_s;
    for (;;) {
      wire::Header head;
      Bytes body;
      std::string why;
      switch (reader_.next(&head, &body, &why)) {
        case FrameReader::Next::kMessage:
          return parse_control_message(ControlReceiver::kNode, head, body, out, &why);
        case FrameReader::Next::kMalformed:
          ADD_FAILURE() << "the scheduler sent something malformed: " << why;
          return false;
        case FrameReader::Next::kNeedMore:
          break;
      }
      uint8_t buf[4096];
      long n = raw_.receive(buf, sizeof buf, deadline - now_s());
      if (n <= 0) return false;
      reader_.append(buf, static_cast<size_t>(n));
    }
  }

  // Reads until the scheduler hangs up: true; false at the deadline.
  bool hung_up_within(double timeout_s) {
    ControlMessage ignored;
    double deadline = now_s() + timeout_s;
    while (receive(&ignored, deadline - now_s())) {
    }
    return now_s() < deadline;
  }

 private:
  Stranger raw_;
  FrameReader reader_{1 << 20};
};

// The ABORT that refuses a stranger; "" when none came.
std::string refusal(ControlStranger& s) {
  ControlMessage m;
  if (!s.receive(&m, kRefusalDeadline)) return "";
  if (m.head.type != wire::Type::kAbort || m.head.cmd != kAbortRefused)
    return std::string("not a refusal but ") + control_type_name(m.head.type);
  return m.text;
}

// What sum_check_worker's tensors are called and how big their first
// partitions are: t<dtype>_s<size>, from 1 byte up (first two sizes only,
// whole tensors of one partition).
struct Target {
  uint64_t key;
  uint8_t dtype;
  size_t bytes;
};
std::vector<Target> worker_keys() {
  const uint8_t dtypes[] = {CARAVAN_FLOAT32, CARAVAN_FLOAT64, CARAVAN_FLOAT16, CARAVAN_UINT8,
                            CARAVAN_INT32,   CARAVAN_INT8,    CARAVAN_INT64,   CARAVAN_BFLOAT16};
  std::vector<Target> out;
  for (int t = 0; t < 8; ++t)
    for (int s = 0; s < 2; ++s) {
      std::string name = "t" + std::to_string(t) + "_s" + std::to_string(s);
      size_t bytes = s == 0 ? caravan_dtype_size(dtypes[t]) : 4096;
      out.push_back({name_hash(name + "#0"), dtypes[t], bytes});
    }
  return out;
}

// Pushes into every small key of the job, each request claiming to come
// from worker 0: unsealed, or sealed under a wrong token. Were one
// accepted, worker 0's own push of that round would be refused as a
// second one and the job would fail.
void forge_pushes(int van_port, const auth::JobToken* wrong) {
  ZmqStranger s(van_port, kRefusalDeadline);
  ASSERT_EQ(s.error(), "");
  // A guess at the job nonce: the stranger cannot know the real one.
  std::unique_ptr<MessageSeal> seal;
  if (wrong)
    seal = std::make_unique<MessageSeal>(*wrong, auth::fresh_nonce(), worker_id(0),
                                         std::vector<int32_t>{worker_id(0), server_id(0)});
  int32_t ts = 1000000;
  for (const Target& t : worker_keys()) {
    wire::Header h;
    h.type = wire::Type::kKV;
    h.flags = wire::kRequest | wire::kPush | wire::kPull;
    h.sender = worker_id(0);
    h.recipient = server_id(0);
    h.timestamp = ts++;
    h.dtype = t.dtype;
    h.seg_len[0] = sizeof t.key;
    h.seg_len[1] = t.bytes;
    Bytes head(wire::kHeaderBytes), key(sizeof t.key), vals(t.bytes, 0x11);
    wire::encode(h, head.data());
    std::memcpy(key.data(), &t.key, sizeof t.key);
    MessageSeal::Seal sealed{};
    if (seal) {
      caravan_segment_v2 segs[4] = {
          {head.data(), head.size()}, {key.data(), key.size()}, {vals.data(), vals.size()}, {}};
      auto lock = seal->seal(server_id(0), segs, &sealed);
    }
    std::vector<Bytes> message = {head, key, vals, {}};
    if (seal) message.push_back(Bytes(sealed.begin(), sealed.end()));
    s.send(message);
  }
}

// Long enough (several seconds) that every stranger below meets the
// workers in the middle of their push_pulls.
LoopbackJobSpec job_spec() {
  return {CARAVAN_SERVER_BIN,
          SUM_CHECK_WORKER_BIN,
          2,
          {"80", "100000"},
          {{"CARAVAN_JOB_TOKEN", kToken}}};
}

// A real Caravan worker that tries to join the running job.
ProcessResult stranger_worker(int port, const std::string* token) {
  ProcessSpec s;
  s.argv = {SUM_CHECK_WORKER_BIN, "1", "16"};
  s.set_env = node_env("worker", port, 2, 1);
  s.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", std::to_string(kConnectTimeout)});
  if (token)
    s.set_env.push_back({"CARAVAN_JOB_TOKEN", *token});
  else
    s.unset_env = {"CARAVAN_JOB_TOKEN"};
  s.timeout_s = kConnectTimeout;
  return run_process(s);
}

TEST(JobToken, StrangersAreRefusedAndLoggedAndTheJobSumsExactly) {
  LoopbackJob job(job_spec());
  job.start_worker(0);
  job.start_worker(1);
  for (auto& w : job.workers)
    ASSERT_TRUE(w->wait_for_output("joined the job as", kStartDeadline)) << w->output();
  std::vector<std::string> scheduler_log;

  // Raw, no token: a registration straight away.
  {
    ControlStranger s(job.port);
    ASSERT_TRUE(s.connected()) << "the scheduler is not listening on " << job.port;
    NodeInfo me;
    me.role = Role::kWorker;
    me.host = "127.0.0.1";
    me.van_address = "tcp://127.0.0.1:1";
    s.send(wire::Type::kRegister, encode_register(me));
    std::string told = refusal(s);
    EXPECT_NE(told.find("this job requires CARAVAN_JOB_TOKEN"), std::string::npos) << told;
    EXPECT_TRUE(s.hung_up_within(kRefusalDeadline)) << "the scheduler kept " << s.address();
    scheduler_log.push_back("scheduler: refused " + s.address() +
                            ": missing CARAVAN_JOB_TOKEN (its first message is REGISTER");
  }
  // Raw, wrong token: the whole challenge, answered with a wrong proof.
  {
    ControlStranger s(job.port);
    ASSERT_TRUE(s.connected());
    auth::Nonce mine = auth::fresh_nonce();
    s.send(wire::Type::kAuthHello, Bytes(mine.begin(), mine.end()));
    ControlMessage challenge;
    ASSERT_TRUE(s.receive(&challenge, kRefusalDeadline)) << "no challenge for " << s.address();
    ASSERT_EQ(challenge.head.type, wire::Type::kAuthChallenge);
    auth::Nonce theirs;
    std::copy_n(challenge.auth.begin(), theirs.size(), theirs.begin());
    auth::Mac proof = auth::JobToken("guess").node_proof(mine, theirs);
    s.send(wire::Type::kAuthProof, Bytes(proof.begin(), proof.end()));
    std::string told = refusal(s);
    EXPECT_NE(told.find("wrong CARAVAN_JOB_TOKEN"), std::string::npos) << told;
    EXPECT_TRUE(s.hung_up_within(kRefusalDeadline)) << "the scheduler kept " << s.address();
    scheduler_log.push_back("scheduler: refused " + s.address() + ": wrong CARAVAN_JOB_TOKEN");
  }

  // The server's van port: forged pushes claiming worker 0.
  forge_pushes(job.van_port, nullptr);
  auth::JobToken guess("guess");
  forge_pushes(job.van_port, &guess);

  // Real workers, without the token and with a wrong one.
  const std::string wrong = "not-the-job-token";
  for (const std::string* token : {static_cast<const std::string*>(nullptr), &wrong}) {
    double start = now_s();
    ProcessResult r = stranger_worker(job.port, token);
    double took = now_s() - start;
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
    EXPECT_LT(took, kRefusalDeadline) << "refused only after " << took << " s:\n" << r.output;
    std::string named = token ? "refused this node: wrong CARAVAN_JOB_TOKEN"
                              : "refused this node: this job requires CARAVAN_JOB_TOKEN";
    EXPECT_NE(r.output.find(named), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find(wrong), std::string::npos) << "the token was logged:\n" << r.output;
  }
  // Whatever the workers wrote so far, read now: a worker that is done has
  // written all of it, so a short wait tells.
  for (auto& w : job.workers)
    ASSERT_FALSE(w->wait_for_output("all sums exact", 0.2))
        << "the workers finished before the strangers were through; the test proves nothing "
           "about a running job (give the workers more rounds)";

  for (RunningProcess* p : job.all()) {
    ProcessResult r = p->wait(120);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find(kToken), std::string::npos) << "the token was logged:\n" << r.output;
  }
  for (auto& w : job.workers)
    EXPECT_NE(w->output().find("all sums exact"), std::string::npos) << w->output();

  const std::string& sched = job.scheduler->output();
  for (const std::string& line : scheduler_log)
    EXPECT_NE(sched.find(line), std::string::npos) << "no '" << line << "' in\n" << sched;
  // The two raw strangers and the two real ones.
  EXPECT_EQ(count_of(sched, "scheduler: refused 127.0.0.1:"), 4) << sched;
  EXPECT_EQ(count_of(sched, "wrong CARAVAN_JOB_TOKEN (its proof does not match"), 2) << sched;

  size_t forged = worker_keys().size();
  const std::string& server = job.server->output();
  for (const char* why :
       {"it claims to come from node 9 but carries no CARAVAN_JOB_TOKEN seal",
        "it claims to come from node 9 but its CARAVAN_JOB_TOKEN seal is wrong"}) {
    std::string line = std::string("kv: refused a message from tcp://127.0.0.1: ") + why;
    EXPECT_EQ(count_of(server, line), static_cast<int>(forged)) << "'" << line << "' in\n"
                                                                << server;
  }
}

// --- A token on one side only, or an empty one: a clear error at once. ---

TEST(JobToken, ATokenOnTheNodeAloneIsNamedAtOnce) {
  int port = free_port();
  ProcessSpec sched;
  sched.argv = {CARAVAN_SERVER_BIN};
  sched.set_env = node_env("scheduler", port, 2, 1);
  sched.unset_env = {"CARAVAN_JOB_TOKEN"};
  sched.set_env.push_back({"CARAVAN_CONNECT_TIMEOUT", "20"});
  sched.set_env.push_back({"PS_VERBOSE", "1"});
  RunningProcess scheduler(sched);
  ASSERT_TRUE(scheduler.wait_for_output("scheduler: listening on port", kStartDeadline))
      << scheduler.output();
  std::string token = kToken;
  double start = now_s();
  ProcessResult r = stranger_worker(port, &token);
  double took = now_s() - start;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_LT(took, kRefusalDeadline) << r.output;
  EXPECT_NE(r.output.find("the scheduler has no CARAVAN_JOB_TOKEN and this node has one"),
            std::string::npos)
      << r.output;
  scheduler.signal(SIGKILL);
  ProcessResult s = scheduler.wait(10);
  EXPECT_NE(s.output.find("scheduler: refused 127.0.0.1:"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("it has a CARAVAN_JOB_TOKEN (its first message is AUTH_HELLO) and this "
                          "scheduler has none"),
            std::string::npos)
      << s.output;
}

TEST(JobToken, AnEmptyTokenIsAConfigError) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_SERVER_BIN};
  spec.set_env = node_env("scheduler", free_port(), 1, 1);
  spec.set_env.push_back({"CARAVAN_JOB_TOKEN", ""});
  spec.timeout_s = kRefusalDeadline;
  ExpectRefusal(spec, {"CARAVAN_JOB_TOKEN is set but empty"});
}

}  // namespace
}  // namespace caravan::test
