// A stranger attacks a live job: it connects to the scheduler's control port
// and to the server's van port and sends random bytes, truncated headers and
// headers whose lengths claim gigabytes, first while the job starts up and
// again while the workers push_pull. The scheduler must log every such
// connection with its address and drop it; the server's van must drop what
// does not speak its protocol, and the engine must drop (and log, naming the
// sender) every malformed message that does; the job must complete with
// exact sums and every process exit 0.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/control/node_info.h"
#include "engine/wire/header.h"
#include "tests/support/control_frame.h"
#include "tests/support/loopback_job.h"
#include "tests/support/process.h"
#include "tests/support/zmq_stranger.h"

namespace caravan::test {
namespace {

using Bytes = std::vector<uint8_t>;

// PS_HEARTBEAT_TIMEOUT, and so how long the scheduler lets a connection sit
// in the middle of a message, or before its first one.
constexpr int kStallLimit = 3;
// How long an immediate drop may take on a loaded machine.
constexpr double kDropDeadline = 5;
constexpr double kStartDeadline = 30;

Bytes random_bytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(gen());
  // A first byte of "CRVN" or ZMTP's 0xFF would make this a different test.
  b[0] = 0x5A;
  return b;
}

Bytes header(wire::Type type, uint64_t seg0, uint64_t seg1 = 0) {
  wire::Header h;
  h.type = type;
  h.seg_len[0] = seg0;
  h.seg_len[1] = seg1;
  Bytes b(wire::kHeaderBytes);
  wire::encode(h, b.data());
  return b;
}

Bytes first(const Bytes& b, size_t n) { return Bytes(b.begin(), b.begin() + n); }

constexpr uint64_t kFourGiB = 4ull << 30;

// A stranger that speaks ZMTP (through libzmq, as any zmq program could)
// and sends data-plane messages that are not what they claim.
void send_malformed_kv(int van_port) {
  ZmqStranger s(van_port, kDropDeadline);
  ASSERT_EQ(s.error(), "");
  wire::Header h;
  h.type = wire::Type::kKV;
  h.flags = wire::kRequest | wire::kPush | wire::kPull;
  h.sender = worker_id(0);
  h.recipient = server_id(0);
  h.seg_len[0] = 8;
  h.seg_len[1] = kFourGiB;  // while 16 bytes follow
  Bytes claims(wire::kHeaderBytes);
  wire::encode(h, claims.data());
  s.send({first(claims, 40), {}, {}, {}});
  s.send({claims, Bytes(8, 1), Bytes(16, 2), {}});
  s.send({claims, Bytes(8, 1)});
}

// Long enough (seconds here) that the strangers of the second round meet
// workers in the middle of their push_pulls.
LoopbackJobSpec job_spec() {
  return {CARAVAN_SERVER_BIN,
          SUM_CHECK_WORKER_BIN,
          2,
          {"30", "100000"},
          {{"PS_HEARTBEAT_INTERVAL", "1"}, {"PS_HEARTBEAT_TIMEOUT", std::to_string(kStallLimit)}}};
}

struct Expected {
  std::string address;
  std::string reason;
};

TEST(HostileInput, StrangersAreLoggedAndDroppedAndTheJobSumsExactly) {
  LoopbackJob job(job_spec());
  job.start_worker(0);
  ASSERT_TRUE(job.scheduler->wait_for_output("scheduler: listening on port", kStartDeadline))
      << job.scheduler->output();
  ASSERT_TRUE(job.server->wait_for_output("listening at tcp://", kStartDeadline))
      << job.server->output();
  std::vector<Expected> scheduler_log;

  // --- During start-up: the scheduler holds two registrations and waits
  // for the second worker, which is not started yet.
  Stranger silent(job.port);
  Stranger stalled(job.port);
  ASSERT_TRUE(silent.connected() && stalled.connected()) << "scheduler not listening";
  stalled.send(first(header(wire::Type::kRegister, 100), 40));
  double stall_start = now_s();

  struct Attack {
    const char* what;
    Bytes bytes;
    std::string reason;  // as the scheduler logs it
  };
  std::vector<Attack> attacks = {
      {"random bytes", random_bytes(4096, 1), "malformed message: bad magic"},
      {"a header claiming 4 GiB", header(wire::Type::kRegister, kFourGiB),
       "malformed message: segment 0 declares 4294967296 bytes, over the limit of 16777216"},
      {"a data-plane header", control_frame(wire::Type::kKV, {}),
       "malformed message: a KV message does not belong on the scheduler's end"},
      {"a registration of random bytes", control_frame(wire::Type::kRegister, random_bytes(50, 2)),
       "malformed message: malformed REGISTER body of 50 bytes"},
  };
  for (auto& a : attacks) {
    Stranger s(job.port);
    ASSERT_TRUE(s.connected()) << a.what;
    s.send(a.bytes);
    EXPECT_TRUE(s.dropped_within(kDropDeadline))
        << a.what << " from " << s.address() << ": the scheduler kept the connection";
    scheduler_log.push_back({s.address(), a.reason});
  }
  {
    Stranger s(job.port);
    ASSERT_TRUE(s.connected());
    s.send(first(header(wire::Type::kRegister, 100), 40));
    scheduler_log.push_back(
        {s.address(), "connection closed in the middle of a message (40 of 72 header bytes)"});
  }

  // The server's van port, raw: nothing there speaks ZMTP, so the van must
  // hang up rather than read it as messages.
  for (const Bytes& raw : {random_bytes(4096, 3), header(wire::Type::kKV, 8, kFourGiB)}) {
    Stranger s(job.van_port);
    ASSERT_TRUE(s.connected()) << "server van not listening on " << job.van_port;
    s.send(raw);
    EXPECT_TRUE(s.dropped_within(kDropDeadline))
        << "the server's van kept a connection from " << s.address() << " that sent " << raw.size()
        << " bytes of no protocol";
  }
  send_malformed_kv(job.van_port);

  // Half a header, then silence; and no message at all.
  EXPECT_TRUE(stalled.dropped_within(kStallLimit + kDropDeadline))
      << "a connection stalled mid-header was kept";
  EXPECT_GE(now_s() - stall_start, kStallLimit - 0.5) << "dropped before the stall limit";
  scheduler_log.push_back(
      {stalled.address(), "stalled for 3 s in the middle of a message (40 of 72 header bytes)"});
  EXPECT_TRUE(silent.dropped_within(kDropDeadline)) << "a silent connection was kept";
  scheduler_log.push_back({silent.address(), "sent no message within 3 s of connecting"});

  // --- The job runs: the second worker joins, and strangers keep coming.
  job.start_worker(1);
  ASSERT_TRUE(job.workers[1]->wait_for_output("joined the job as", kStartDeadline))
      << job.workers[1]->output();
  {
    Stranger s(job.port);
    ASSERT_TRUE(s.connected()) << "the scheduler is gone";
    s.send(random_bytes(100, 4));
    EXPECT_TRUE(s.dropped_within(kDropDeadline));
    scheduler_log.push_back({s.address(), "malformed message: bad magic"});
    Stranger v(job.van_port);
    ASSERT_TRUE(v.connected()) << "the server is gone";
    v.send(random_bytes(4096, 5));
    EXPECT_TRUE(v.dropped_within(kDropDeadline));
  }

  for (RunningProcess* p : job.all()) {
    ProcessResult r = p->wait(60);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  for (auto& w : job.workers)
    EXPECT_NE(w->output().find("all sums exact"), std::string::npos) << w->output();

  const std::string& sched = job.scheduler->output();
  for (const Expected& e : scheduler_log) {
    std::string line = "control: dropping the connection from " + e.address + ": " + e.reason;
    EXPECT_NE(sched.find(line), std::string::npos) << "no '" << line << "' in\n" << sched;
  }
  const std::string& server = job.server->output();
  for (const char* reason :
       {"header is 40 bytes, expected 72", "segment 2 has 16 bytes, the header declares 4294967296",
        "2 segments, expected 4"}) {
    std::string line = std::string("dropping a malformed message from tcp://127.0.0.1: ") + reason;
    EXPECT_NE(server.find(line), std::string::npos) << "no '" << line << "' in\n" << server;
  }
}

}  // namespace
}  // namespace caravan::test
