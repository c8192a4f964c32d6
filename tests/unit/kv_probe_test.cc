// KVEndpoint::probe over real zmq vans on loopback: a path counts as
// working only when the probe reaches the peer and its echo comes back over
// the peer's own connection, so a wrong address on either side fails it,
// within the deadline.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "caravan/caravan.h"
#include "engine/base/config.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/van/van.h"

namespace caravan {
namespace {

using Clock = std::chrono::steady_clock;

struct Side {
  std::unique_ptr<Van> van;
  std::unique_ptr<KVEndpoint> kv;
  std::string address;

  explicit Side(int id) {
    JobConfig config;
    config.van = "zmq";
    van = open_van(config);
    address = van->listen("127.0.0.1", 0);
    kv = std::make_unique<KVEndpoint>(*van, id, [](KVMessage&&) {});
  }
  ~Side() {
    kv->stop();
    kv.reset();
    van.reset();
  }
};

// A loopback address where nothing listens: a port bound, never listened
// on, and held for the test's duration, so no one else can take it.
struct DeadAddress {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  std::string address;
  DeadAddress() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    address = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  }
  ~DeadAddress() { close(fd); }
};

constexpr int kA = 1, kB = 2;

TEST(KVProbe, AnsweredWhenBothDirectionsWork) {
  Side a(kA), b(kB);
  a.van->connect(kB, b.address);
  b.van->connect(kA, a.address);
  a.kv->start();
  b.kv->start();
  auto start = Clock::now();
  EXPECT_TRUE(a.kv->probe({kB}, start + std::chrono::seconds(10)).empty());
  EXPECT_TRUE(b.kv->probe({kA}, start + std::chrono::seconds(10)).empty());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

// B reaches A at a wrong address: A's probe arrives at B but its echo is
// lost on B's way back, and B's own probe never leaves. Both must give up
// at the deadline and name the other.
TEST(KVProbe, UnansweredWhenOneDirectionGoesNowhere) {
  Side a(kA), b(kB);
  DeadAddress dead;
  a.van->connect(kB, b.address);
  b.van->connect(kA, dead.address);
  a.kv->start();
  b.kv->start();
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(1500);
  std::map<int, std::string> from_b;
  std::thread b_probes([&] { from_b = b.kv->probe({kA}, deadline); });
  auto from_a = a.kv->probe({kB}, deadline);
  b_probes.join();
  auto took = Clock::now() - start;
  ASSERT_EQ(from_a.size(), 1u);
  EXPECT_EQ(from_a.begin()->first, kB);
  ASSERT_EQ(from_b.size(), 1u);
  EXPECT_EQ(from_b.begin()->first, kA);
  EXPECT_GE(took, std::chrono::milliseconds(1400));
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(KVProbe, ASendTheVanRefusesEndsTheWaitAtOnceWithItsReason) {
  Side a(kA);
  a.kv->start();
  auto start = Clock::now();
  auto out = a.kv->probe({kB}, start + std::chrono::seconds(30));  // never connected
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[kB].find("not connected"), std::string::npos) << out[kB];
}

TEST(KVProbe, AFailedJobEndsTheWait) {
  Side a(kA);
  DeadAddress dead;
  a.van->connect(kB, dead.address);
  a.kv->start();
  auto start = Clock::now();
  std::thread failer([&] {
    // The probe is under way or about to be; failing before it starts
    // must end it just the same.
    a.kv->fail_all(CARAVAN_ERR_PEER_LOST, "lost server 0");
  });
  auto out = a.kv->probe({kB}, start + std::chrono::seconds(30));
  failer.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace caravan
