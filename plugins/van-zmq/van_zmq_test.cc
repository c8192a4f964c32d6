// What is particular to the ZeroMQ van: its parameters, address forms,
// error texts, a raw zmq peer, and connect() returning before the peer is
// up. Everything every van must do is caravan-van-check's
// (VanConformance.zmq); nothing is tested twice.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "caravan/plugin/van_v1.h"

namespace {

using Params = std::map<std::string, std::string>;
using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(60);

const caravan_plugin_descriptor* Descriptor() {
  static const caravan_plugin_descriptor* desc = [] {
    void* handle = dlopen(CARAVAN_VAN_ZMQ_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      ADD_FAILURE() << "dlopen: " << dlerror();
      return static_cast<const caravan_plugin_descriptor*>(nullptr);
    }
    auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(handle, CARAVAN_PLUGIN_ENTRY_SYMBOL));
    return entry ? entry() : nullptr;
  }();
  return desc;
}

const caravan_van_ops_v1& Ops() {
  return *static_cast<const caravan_van_ops_v1*>(Descriptor()->ops);
}

struct FakeHost {
  caravan_host_v1 table{};
  std::map<std::string, std::string> params;
  std::mutex mu;
  std::string last_error;
  std::vector<std::string> warnings;

  explicit FakeHost(Params p) : params(std::move(p)) {
    table.struct_size = sizeof table;
    table.host_ctx = this;
    table.log = [](void* ctx, caravan_log_level level, const char* message) {
      std::fprintf(stderr, "[van-zmq %d] %s\n", static_cast<int>(level), message);
      auto* self = static_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu);
      if (level >= CARAVAN_LOG_WARNING) self->warnings.push_back(message);
    };
    table.get_param = [](void* ctx, const char* name) -> const char* {
      auto* self = static_cast<FakeHost*>(ctx);
      auto it = self->params.find(name);
      return it == self->params.end() ? nullptr : it->second.c_str();
    };
    table.get_env = [](void*, const char*) -> const char* { return nullptr; };
    table.set_error = [](void* ctx, const char* message) {
      auto* self = static_cast<FakeHost*>(ctx);
      std::lock_guard<std::mutex> lock(self->mu);
      self->last_error = message;
    };
  }
  std::string error() {
    std::lock_guard<std::mutex> lock(mu);
    return last_error;
  }
};

struct Van {
  FakeHost host;
  void* ctx = nullptr;
  std::string addr;

  explicit Van(Params params = {}) : host(std::move(params)) {
    EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_OK) << host.error();
  }
  ~Van() {
    if (ctx) Ops().finalize(ctx);
  }
  void Finalize() {
    EXPECT_EQ(Ops().finalize(ctx), CARAVAN_STATUS_OK);
    ctx = nullptr;
  }
  caravan_status Listen(const char* h = "127.0.0.1", int port = 0) {
    char buf[CARAVAN_VAN_MAX_ADDRESS_V1] = {0};
    caravan_status s = Ops().listen(ctx, h, port, buf, sizeof buf);
    if (s == CARAVAN_STATUS_OK) addr = buf;
    return s;
  }
  caravan_status Send(uint64_t peer, const std::vector<caravan_segment_v1>& segs,
                      caravan_send_done_fn done = nullptr, void* cookie = nullptr) {
    return Ops().send(ctx, peer, segs.data(), segs.size(), done, cookie);
  }
  // Waits for one message (looping over short recv calls up to a deadline),
  // hands it to `check` and releases it.
  bool RecvOne(const std::function<void(const caravan_van_message_v1&)>& check) {
    auto deadline = Clock::now() + kPatience;
    while (Clock::now() < deadline) {
      caravan_van_message_v1 msg{};
      msg.struct_size = sizeof msg;
      caravan_status s = Ops().recv(ctx, 200, &msg);
      if (s == CARAVAN_STATUS_TIMEOUT) continue;
      EXPECT_EQ(s, CARAVAN_STATUS_OK) << host.error();
      if (s != CARAVAN_STATUS_OK) return false;
      EXPECT_NE(msg.peer, nullptr);
      check(msg);
      EXPECT_EQ(Ops().release(ctx, &msg), CARAVAN_STATUS_OK);
      return true;
    }
    ADD_FAILURE() << "no message within the deadline";
    return false;
  }
};

// Counts done calls per send; cookies point at the slots.
class DoneLog {
 public:
  explicit DoneLog(size_t n) : slots_(n) {
    for (size_t i = 0; i < n; ++i) slots_[i].log = this;
  }
  void* cookie(size_t i) { return &slots_[i]; }
  static void Done(void* cookie, caravan_status status) {
    auto* slot = static_cast<Slot*>(cookie);
    slot->status.store(status);
    slot->calls.fetch_add(1);
    std::lock_guard<std::mutex> lock(slot->log->mu_);
    ++slot->log->total_;
    slot->log->cv_.notify_all();
  }
  bool WaitAll() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_until(lock, Clock::now() + kPatience, [&] { return total_ >= slots_.size(); });
  }
  size_t total() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }
  int calls(size_t i) const { return slots_[i].calls.load(); }
  caravan_status status(size_t i) const { return slots_[i].status.load(); }

 private:
  struct Slot {
    DoneLog* log = nullptr;
    std::atomic<int> calls{0};
    std::atomic<caravan_status> status{1};
  };
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t total_ = 0;
};

std::vector<uint8_t> Pattern(size_t n, unsigned seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131u + (i >> 9) + seed * 7u);
  return v;
}

caravan_segment_v1 Seg(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }

void ExpectSame(const caravan_recv_segment_v1& got, const std::vector<uint8_t>& want) {
  ASSERT_EQ(got.len, want.size());
  if (!want.empty()) {
    EXPECT_EQ(std::memcmp(got.data, want.data(), want.size()), 0);
  }
}

TEST(VanZmqDescriptor, NameAndParams) {
  const caravan_plugin_descriptor* d = Descriptor();
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "zmq");
  EXPECT_EQ(d->abi_minor, static_cast<uint32_t>(CARAVAN_VAN_ABI_MINOR_V1));
  ASSERT_EQ(d->num_params, 5u);
  EXPECT_STREQ(d->params[0].name, "IO_THREADS");
  EXPECT_STREQ(d->params[0].default_value, "1");
  EXPECT_STREQ(d->params[3].name, "MAX_MESSAGE_BYTES");
  EXPECT_STREQ(d->params[4].name, "LINGER_MS");
}

TEST(VanZmq, Properties) {
  Van v;
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(Ops().properties(v.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_TRUE(p.caps & CARAVAN_VAN_CAP_ZERO_COPY_SEND);
  EXPECT_EQ(p.max_segments, 8u);
  EXPECT_EQ(p.max_message_bytes, SIZE_MAX);
  EXPECT_STREQ(p.transport, "tcp");
  p.struct_size = 4;
  EXPECT_EQ(Ops().properties(v.ctx, &p), CARAVAN_STATUS_INVALID_ARGUMENT);
}

TEST(VanZmq, BadParamFailsInit) {
  FakeHost host(Params{{"IO_THREADS", "lots"}});
  void* ctx = nullptr;
  EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(host.error().find("IO_THREADS"), std::string::npos) << host.error();
}

TEST(VanZmq, LingerZeroIsRefused) {
  FakeHost host(Params{{"LINGER_MS", "0"}});
  void* ctx = nullptr;
  EXPECT_EQ(Ops().init(&host.table, &ctx), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(host.error().find("LINGER_MS"), std::string::npos) << host.error();
}

TEST(VanZmq, MaxMessageBytesParam) {
  Van a(Params{{"MAX_MESSAGE_BYTES", "1000"}});
  caravan_van_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(Ops().properties(a.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_EQ(p.max_message_bytes, 1000u);
  ASSERT_EQ(a.Listen(), CARAVAN_STATUS_OK);
  ASSERT_EQ(Ops().connect(a.ctx, 1, a.addr.c_str()), CARAVAN_STATUS_OK);
  auto big = Pattern(1001, 1);
  EXPECT_EQ(a.Send(1, {Seg(big)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  auto fits = Pattern(1000, 2);
  ASSERT_EQ(a.Send(1, {Seg(fits)}), CARAVAN_STATUS_OK);
  a.RecvOne([&](const caravan_van_message_v1& m) { ExpectSame(m.segments[0], fits); });
}

TEST(VanZmq, RecvBeforeListenTimesOut) {
  Van v;
  caravan_van_message_v1 msg{};
  msg.struct_size = sizeof msg;
  auto t0 = Clock::now();
  EXPECT_EQ(Ops().recv(v.ctx, 50, &msg), CARAVAN_STATUS_TIMEOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(45));
}

TEST(VanZmq, BadHostIsInvalidArgument) {
  Van v;
  EXPECT_EQ(v.Listen("256.1.1.1", 0), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.host.error().find("256.1.1.1"), std::string::npos) << v.host.error();
  EXPECT_EQ(v.Listen("127.0.0.1", 70000), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(v.host.error().find("70000"), std::string::npos) << v.host.error();
  EXPECT_EQ(v.Listen("127.0.0.1", 0), CARAVAN_STATUS_OK);  // failures left no trace
}

TEST(VanZmq, BusyPortIsInvalidArgument) {
  Van a, b;
  ASSERT_EQ(a.Listen(), CARAVAN_STATUS_OK);
  std::string port = a.addr.substr(a.addr.rfind(':') + 1);
  EXPECT_EQ(b.Listen("127.0.0.1", std::stoi(port)), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(b.host.error().find("port " + port), std::string::npos) << b.host.error();
  EXPECT_NE(b.host.error().find("127.0.0.1"), std::string::npos) << b.host.error();
  EXPECT_EQ(a.Listen(), CARAVAN_STATUS_INVALID_ARGUMENT);  // once per instance
}

TEST(VanZmq, HostNameIsResolvedAndAdvertised) {
  Van a;
  ASSERT_EQ(a.Listen("localhost", 0), CARAVAN_STATUS_OK) << a.host.error();
  EXPECT_EQ(a.addr.rfind("tcp://localhost:", 0), 0u) << a.addr;
}

class VanZmqPair : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(a.Listen(), CARAVAN_STATUS_OK) << a.host.error();
    ASSERT_EQ(b.Listen(), CARAVAN_STATUS_OK) << b.host.error();
    EXPECT_EQ(a.addr.rfind("tcp://127.0.0.1:", 0), 0u) << a.addr;
    ASSERT_EQ(Ops().connect(a.ctx, kB, b.addr.c_str()), CARAVAN_STATUS_OK) << a.host.error();
    ASSERT_EQ(Ops().connect(b.ctx, kA, a.addr.c_str()), CARAVAN_STATUS_OK) << b.host.error();
  }
  static constexpr uint64_t kA = 1, kB = 2;
  Van a, b;
};

TEST_F(VanZmqPair, PeerTextIsTheSendersHost) {
  auto ping = Pattern(100, 1);
  ASSERT_EQ(a.Send(kB, {Seg(ping)}), CARAVAN_STATUS_OK);
  b.RecvOne([&](const caravan_van_message_v1& m) { EXPECT_STREQ(m.peer, "tcp://127.0.0.1"); });
}

TEST_F(VanZmqPair, ErrorTextsNameTheCulprit) {
  auto data = Pattern(10, 5);
  EXPECT_EQ(Ops().connect(a.ctx, kB, b.addr.c_str()), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.host.error().find("peer 2"), std::string::npos) << a.host.error();
  EXPECT_EQ(Ops().connect(a.ctx, 7, "nonsense"), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.host.error().find("nonsense"), std::string::npos) << a.host.error();
  EXPECT_EQ(a.Send(42, {Seg(data)}), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(a.host.error().find("peer 42"), std::string::npos) << a.host.error();

  caravan_van_message_v1 msg{};
  msg.struct_size = sizeof msg;
  EXPECT_EQ(Ops().release(a.ctx, &msg), CARAVAN_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(a.Send(kB, {Seg(data)}), CARAVAN_STATUS_OK);
  caravan_status s;
  auto deadline = Clock::now() + kPatience;
  while ((s = Ops().recv(b.ctx, 200, &msg)) == CARAVAN_STATUS_TIMEOUT && Clock::now() < deadline) {
  }
  ASSERT_EQ(s, CARAVAN_STATUS_OK);
  caravan_van_message_v1 copy = msg;
  EXPECT_EQ(Ops().release(b.ctx, &msg), CARAVAN_STATUS_OK);
  EXPECT_EQ(Ops().release(b.ctx, &copy), CARAVAN_STATUS_INVALID_ARGUMENT);  // twice
}

TEST_F(VanZmqPair, TooManySegmentsAreDroppedWithWarning) {
  // A raw DEALER can send what the van never would: 9 data frames.
  void* zctx = zmq_ctx_new();
  void* dealer = zmq_socket(zctx, ZMQ_DEALER);
  int zero = 0;
  zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
  ASSERT_EQ(zmq_connect(dealer, b.addr.c_str()), 0);
  for (int i = 0; i < 9; ++i) zmq_send(dealer, "x", 1, i < 8 ? ZMQ_SNDMORE : 0);
  zmq_send(dealer, "ok", 2, 0);
  b.RecvOne([&](const caravan_van_message_v1& m) {
    ASSERT_EQ(m.num_segments, 1u);
    EXPECT_EQ(std::string(static_cast<char*>(m.segments[0].data), m.segments[0].len), "ok");
  });
  zmq_close(dealer);
  zmq_ctx_term(zctx);
  std::lock_guard<std::mutex> lock(b.host.mu);
  ASSERT_EQ(b.host.warnings.size(), 1u);
  EXPECT_NE(b.host.warnings[0].find("tcp://127.0.0.1"), std::string::npos) << b.host.warnings[0];
}

TEST_F(VanZmqPair, QueuedForPeerNeverUpSettleWithClosed) {
  // connect() returns before the peer is up and sends queue meanwhile;
  // disconnect and finalize settle them.
  auto mib = Pattern(1 << 20, 6);
  ASSERT_EQ(Ops().connect(a.ctx, 9, "tcp://127.0.0.1:1"), CARAVAN_STATUS_OK);
  ASSERT_EQ(Ops().connect(a.ctx, 10, "tcp://127.0.0.1:1"), CARAVAN_STATUS_OK);
  DoneLog log(20);
  for (size_t i = 0; i < 20; ++i)
    ASSERT_EQ(a.Send(i < 10 ? 9 : 10, {Seg(mib)}, DoneLog::Done, log.cookie(i)), CARAVAN_STATUS_OK);
  ASSERT_EQ(Ops().disconnect(a.ctx, 9), CARAVAN_STATUS_OK);
  a.Finalize();
  EXPECT_EQ(log.total(), 20u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(log.calls(i), 1) << i;
    EXPECT_EQ(log.status(i), CARAVAN_STATUS_CLOSED) << i;
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
  FakeHost host(Params{{"LINGER_MS", "200"}});
  void* ctx = nullptr;
  if (Ops().init(&host.table, &ctx) != CARAVAN_STATUS_OK) _exit(12);
  if (Ops().connect(ctx, 1, endpoint) != CARAVAN_STATUS_OK) _exit(13);
  static std::vector<uint8_t> block(8u << 20, 7);
  caravan_segment_v1 segs[3] = {{block.data(), block.size()}, {block.data(), block.size()},
                                {block.data(), block.size()}};
  for (int i = 0; i < 4; ++i)
    if (Ops().send(ctx, 1, segs, 3, nullptr, nullptr) != CARAVAN_STATUS_OK) _exit(14);
  char ack;
  if (!ReadWithin(fds[0], &ack, 1, 30000)) _exit(15);
  kill(peer, SIGKILL);
  if (Ops().finalize(ctx) != CARAVAN_STATUS_OK) _exit(16);
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
      FAIL() << "round " << round << ": the sending process died of signal "
             << WTERMSIG(status) << " (" << strsignal(WTERMSIG(status)) << ")";
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0) << "round " << round << " failed at step "
                                      << WEXITSTATUS(status) << " of RunSenderRound";
  }
}

}  // namespace
