// What is particular to the ZeroMQ van: its parameters, address forms,
// error texts, a raw zmq peer, and connect() returning before the peer is
// up. Everything every van must do is caravan-van-check's
// (VanConformance.zmq); nothing is tested twice.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/van/kit/payload.h"
#include "conformance/van/kit/van_instance.h"

namespace {

using namespace caravan::van_check;

const VanPlugin& Zmq() { return van_file(CARAVAN_VAN_ZMQ_PLUGIN); }

// An instance of the ZeroMQ van, shown an empty environment so that these
// tests do not depend on what the machine's holds.
struct Van : VanInstance {
  explicit Van(Params params = {}) : VanInstance(Zmq(), std::move(params), Params{}) {
    EXPECT_TRUE(started());
  }
};

TEST(VanZmqDescriptor, NameAndParams) {
  const caravan_plugin_descriptor* d = Zmq().descriptor;
  EXPECT_STREQ(d->name, "zmq");
  EXPECT_EQ(d->abi_major, static_cast<uint32_t>(CARAVAN_VAN_ABI_MAJOR_V2));
  EXPECT_EQ(d->abi_minor, static_cast<uint32_t>(CARAVAN_VAN_ABI_MINOR_V2));
  ASSERT_EQ(d->num_params, 6u);
  EXPECT_STREQ(d->params[0].name, "IO_THREADS");
  EXPECT_STREQ(d->params[0].default_value, "1");
  EXPECT_STREQ(d->params[3].name, "MAX_MESSAGE_BYTES");
  EXPECT_STREQ(d->params[4].name, "LINGER_MS");
  EXPECT_STREQ(d->params[5].name, "SNDBUF");
  EXPECT_STREQ(d->params[5].default_value, "auto");
}

TEST(VanZmq, Properties) {
  Van v;
  caravan_van_properties_v2 p = v.properties();
  EXPECT_TRUE(p.caps & CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND);
  EXPECT_EQ(p.max_segments, 8u);
  EXPECT_EQ(p.max_message_bytes, SIZE_MAX);
  EXPECT_STREQ(p.transport, "tcp");
  p.struct_size = 4;
  EXPECT_EQ(v.properties(&p), CARAVAN_STATUS_INVALID_ARGUMENT);
}

TEST(VanZmq, BadParamFailsInit) {
  VanInstance v(Zmq(), {{"IO_THREADS", "lots"}}, Params{});
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("IO_THREADS"), std::string::npos) << v.error();
}

TEST(VanZmq, LingerZeroIsRefused) {
  VanInstance v(Zmq(), {{"LINGER_MS", "0"}}, Params{});
  EXPECT_EQ(v.init_status(), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("LINGER_MS"), std::string::npos) << v.error();
}

TEST(VanZmq, MaxMessageBytesParam) {
  Van a(Params{{"MAX_MESSAGE_BYTES", "1000"}});
  EXPECT_EQ(a.properties().max_message_bytes, 1000u);
  ASSERT_EQ(a.listen(), CARAVAN_STATUS_OK);
  ASSERT_EQ(a.connect(1, a.addr()), CARAVAN_STATUS_OK);
  auto big = pattern(1001, 1);
  EXPECT_EQ(a.send(1, {seg(big)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  auto fits = pattern(1000, 2);
  ASSERT_EQ(a.send(1, {seg(fits)}), CARAVAN_STATUS_OK);
  a.recv_one([&](const Message& m) { expect_same(m.segments[0], fits); });
}

TEST(VanZmq, RecvBeforeListenTimesOut) {
  Van v;
  Message msg;
  auto t0 = Clock::now();
  EXPECT_EQ(v.recv(50, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
}

TEST(VanZmq, BadHostIsInvalidArgument) {
  Van v;
  EXPECT_EQ(v.listen("256.1.1.1", 0), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("256.1.1.1"), std::string::npos) << v.error();
  EXPECT_EQ(v.listen("127.0.0.1", 70000), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.error().find("70000"), std::string::npos) << v.error();
  EXPECT_EQ(v.listen("127.0.0.1", 0), CARAVAN_STATUS_OK);  // failures left no trace
}

TEST(VanZmq, BusyPortIsInvalidArgument) {
  Van a, b;
  ASSERT_EQ(a.listen(), CARAVAN_STATUS_OK);
  std::string port = a.addr().substr(a.addr().rfind(':') + 1);
  EXPECT_EQ(b.listen("127.0.0.1", std::stoi(port)), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(b.error().find("port " + port), std::string::npos) << b.error();
  EXPECT_NE(b.error().find("127.0.0.1"), std::string::npos) << b.error();
  EXPECT_EQ(a.listen(), CARAVAN_STATUS_INVALID_ARGUMENT);  // once per instance
}

TEST(VanZmq, HostNameIsResolvedAndAdvertised) {
  Van a;
  ASSERT_EQ(a.listen("localhost", 0), CARAVAN_STATUS_OK) << a.error();
  EXPECT_EQ(a.addr().rfind("tcp://localhost:", 0), 0u) << a.addr();
}

class VanZmqPair : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(a.listen(), CARAVAN_STATUS_OK) << a.error();
    ASSERT_EQ(b.listen(), CARAVAN_STATUS_OK) << b.error();
    EXPECT_EQ(a.addr().rfind("tcp://127.0.0.1:", 0), 0u) << a.addr();
    ASSERT_EQ(a.connect(kB, b.addr()), CARAVAN_STATUS_OK) << a.error();
    ASSERT_EQ(b.connect(kA, a.addr()), CARAVAN_STATUS_OK) << b.error();
  }
  static constexpr uint64_t kA = 1, kB = 2;
  Van a, b;
};

TEST_F(VanZmqPair, PeerTextIsTheSendersHost) {
  auto ping = pattern(100, 1);
  ASSERT_EQ(a.send(kB, {seg(ping)}), CARAVAN_STATUS_OK);
  b.recv_one([&](const Message& m) { EXPECT_STREQ(m.peer, "tcp://127.0.0.1"); });
}

TEST_F(VanZmqPair, ErrorTextsNameTheCulprit) {
  auto data = pattern(10, 5);
  EXPECT_EQ(a.connect(kB, b.addr()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.error().find("peer 2"), std::string::npos) << a.error();
  EXPECT_EQ(a.connect(7, "nonsense"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.error().find("nonsense"), std::string::npos) << a.error();
  EXPECT_EQ(a.send(42, {seg(data)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.error().find("peer 42"), std::string::npos) << a.error();

  EXPECT_EQ(a.release(Message{}), CARAVAN_STATUS_INVALID_ARGUMENT) << "never received";
  ASSERT_EQ(a.send(kB, {seg(data)}), CARAVAN_STATUS_OK);
  Message msg;
  ASSERT_EQ(b.wait_recv(&msg), CARAVAN_STATUS_OK);
  EXPECT_EQ(b.release(msg), CARAVAN_STATUS_OK);
  EXPECT_EQ(b.release(msg), CARAVAN_STATUS_INVALID_ARGUMENT) << "released twice";
}

TEST_F(VanZmqPair, TooManySegmentsAreDroppedWithWarning) {
  // A raw DEALER can send what the van never would: 9 data frames.
  void* zctx = zmq_ctx_new();
  void* dealer = zmq_socket(zctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
  ASSERT_EQ(zmq_connect(dealer, b.addr().c_str()), 0);
  for (int i = 0; i < 9; ++i) zmq_send(dealer, "x", 1, i < 8 ? ZMQ_SNDMORE : 0);
  zmq_send(dealer, "ok", 2, 0);
  b.recv_one([&](const Message& m) {
    ASSERT_EQ(m.num_segments, 1u);
    EXPECT_EQ(std::string(static_cast<char*>(m.segments[0].data), m.segments[0].len), "ok");
  });
  zmq_close(dealer);
  zmq_ctx_term(zctx);
  std::vector<std::string> warnings = b.host().lines(CARAVAN_LOG_WARNING);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("tcp://127.0.0.1"), std::string::npos) << warnings[0];
}

TEST_F(VanZmqPair, QueuedForPeerNeverUpSettleWithClosed) {
  // connect() returns before the peer is up and sends queue meanwhile;
  // disconnect settles them with CLOSED, and finalize ends the rest
  // (unreported, van_v2.h).
  auto mib = pattern(1 << 20, 6);
  ASSERT_EQ(a.connect(9, "tcp://127.0.0.1:1"), CARAVAN_STATUS_OK);
  ASSERT_EQ(a.connect(10, "tcp://127.0.0.1:1"), CARAVAN_STATUS_OK);
  std::vector<Ticket> sent(20);
  for (size_t i = 0; i < 20; ++i)
    ASSERT_EQ(a.send(i < 10 ? 9 : 10, {seg(mib)}, &sent[i]), CARAVAN_STATUS_OK);
  ASSERT_EQ(a.disconnect(9), CARAVAN_STATUS_OK);
  for (size_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(a.wait_sent(sent[i])) << i;
    EXPECT_EQ(a.completions(sent[i]), 1) << i;
    EXPECT_EQ(a.sent_status(sent[i]), CARAVAN_STATUS_CLOSED) << i;
  }
  a.finalize();
  for (size_t i = 10; i < 20; ++i) {
    EXPECT_LE(a.completions(sent[i]), 1) << i;
    EXPECT_NE(a.sent_status(sent[i]), CARAVAN_STATUS_OK) << i << ": never connected, never sent";
  }
}

// --- A peer that dies while a link is part way through a message ----------

// Reads from `fd` until `n` bytes came or `deadline_ms` passed.
bool ReadWithin(int fd, char* buf, size_t n, int deadline_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(deadline_ms);
  size_t got = 0;
  while (got < n) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    ssize_t k = read(fd, buf + got, n - got);
    if (k <= 0) return false;
    got += static_cast<size_t>(k);
  }
  return true;
}

// The stalled peer (a child process): a raw ROUTER that says where it
// listens, takes one frame, says so, and then reads nothing more.
[[noreturn]] void RunStalledPeer(int out) {
  alarm(60);  // never outlives a broken test
  void* zctx = zmq_ctx_new();
  void* router = zmq_socket(zctx, ZMQ_ROUTER);
  char endpoint[256] = {0};
  size_t len = sizeof endpoint - 1;
  if (zmq_bind(router, "tcp://127.0.0.1:*") != 0 ||
      zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len) != 0)
    _exit(3);
  if (write(out, endpoint, sizeof endpoint) != static_cast<ssize_t>(sizeof endpoint)) _exit(3);
  zmq_msg_t frame;
  zmq_msg_init(&frame);
  if (zmq_msg_recv(&frame, router, 0) < 0 || write(out, "r", 1) != 1) _exit(3);
  for (;;) pause();
}

// One round (a child process, so that an abort inside libzmq is seen as
// such): queue more multipart messages than the sockets hold to a peer
// that stops reading, kill the peer, then finalize at once. Exit codes
// other than 0 name the step that failed.
[[noreturn]] void RunSenderRound() {
  alarm(60);
  int fds[2];
  if (pipe(fds) != 0) _exit(10);
  pid_t peer = fork();
  if (peer < 0) _exit(10);
  if (peer == 0) RunStalledPeer(fds[1]);
  char endpoint[256];
  if (!ReadWithin(fds[0], endpoint, sizeof endpoint, 30000)) _exit(11);
  static std::vector<uint8_t> block(8u << 20, 7);
  VanInstance van(Zmq(), {{"LINGER_MS", "200"}}, Params{});
  if (!van.ok()) _exit(12);
  if (van.connect(1, endpoint) != CARAVAN_STATUS_OK) _exit(13);
  for (int i = 0; i < 4; ++i)
    if (van.send_unwatched(1, {seg(block), seg(block), seg(block)}) != CARAVAN_STATUS_OK) _exit(14);
  char ack;
  if (!ReadWithin(fds[0], &ack, 1, 30000)) _exit(15);
  kill(peer, SIGKILL);
  if (van.finalize() != CARAVAN_STATUS_OK) _exit(16);
  waitpid(peer, nullptr, 0);
  _exit(0);
}

// libzmq 4.3 aborts the process (session_base.cpp:260) when a socket
// closed with linger 0 is part way through a multipart message and that
// connection then fails; the race hit about one round in 10 to 100 before
// LINGER_MS existed (docs/known-defects.md).
TEST(VanZmq, PeerDyingMidMessageAtCloseDoesNotAbort) {
  for (int round = 0; round < 40; ++round) {
    pid_t sender = fork();
    ASSERT_GE(sender, 0) << strerror(errno);
    if (sender == 0) RunSenderRound();
    int status = 0;
    ASSERT_EQ(waitpid(sender, &status, 0), sender);
    if (WIFSIGNALED(status))
      FAIL() << "round " << round << ": the sending process died of signal " << WTERMSIG(status)
             << " (" << strsignal(WTERMSIG(status)) << ")";
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0)
        << "round " << round << " failed at step " << WEXITSTATUS(status) << " of RunSenderRound";
  }
}

}  // namespace
