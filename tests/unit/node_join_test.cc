// Node joining a job whose scheduler regroups it (CARAVAN_ELASTIC) the
// moment the node table is out: the regroup reaches the link's thread
// before the joining thread has built its KV endpoint, the order in which a
// server once waited out CARAVAN_CONNECT_TIMEOUT for workers that had
// already left. The scheduler is played by the test, which sends the table
// and the regroup in one go, so the link usually hears both before the
// joining thread wakes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/error.h"
#include "engine/control/node_info.h"
#include "engine/node/node.h"
#include "tests/unit/played_scheduler.h"

namespace caravan {
namespace {

using Clock = std::chrono::steady_clock;

// Answers a worker's registration with a table of that worker and a server
// whose van address no one serves, then at once with a regroup.
class RegroupingScheduler {
 public:
  RegroupingScheduler()
      : played_([this](int conn, ControlMessage&& m) { on_message(conn, std::move(m)); }) {}
  int port() const { return played_.port(); }

 private:
  void on_message(int conn, ControlMessage&& m) {
    hub_.admit(conn);
    if (m.head.type != wire::Type::kRegister) return;
    NodeInfo worker = m.node;
    worker.id = worker_id(0);
    worker.rank = 0;
    worker.settings.clear();
    NodeInfo server;
    server.role = Role::kServer;
    server.id = server_id(0);
    server.rank = 0;
    server.host = "127.0.0.1";
    server.pid = 1;
    server.van_address = "tcp://127.0.0.1:1";  // nothing answers the probe
    wire::Header table;
    table.type = wire::Type::kNodeTable;
    table.sender = kSchedulerId;
    table.recipient = worker.id;
    hub_.send(conn, table, encode_node_table({worker, server}));
    std::string text = "worker (pid 2) joins the job";
    wire::Header regroup;
    regroup.type = wire::Type::kAbort;
    regroup.sender = kSchedulerId;
    regroup.cmd = kAbortRegroup;
    hub_.send(conn, regroup, std::vector<uint8_t>(text.begin(), text.end()));
  }

  // Last: its thread starts once the rest is built and stops before it goes.
  PlayedScheduler played_;
  ControlHub& hub_ = played_.hub();
};

TEST(NodeJoin, ARegroupRightAfterTheTableEndsTheJoinAtOnce) {
  // The bad order is a matter of microseconds: try it many times.
  for (int attempt = 0; attempt < 20; ++attempt) {
    RegroupingScheduler scheduler;
    JobConfig config;
    config.role = Role::kWorker;
    config.van = "zmq";
    config.root_uri = "127.0.0.1";
    config.root_port = scheduler.port();
    config.node_host = "127.0.0.1";
    config.num_workers = 1;
    config.num_servers = 1;
    config.elastic = true;
    config.connect_timeout_s = 5;
    config.heartbeat_interval_s = 0;
    auto start = Clock::now();
    try {
      Node node(config, NodeOptions{});
      FAIL() << "joined a job that regrouped";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), CARAVAN_ERR_REGROUPED) << e.what();
      EXPECT_NE(std::string(e.what()).find("joins the job"), std::string::npos) << e.what();
      // Without the regroup reaching the endpoint, the probe of the server
      // waits its 5 s.
      EXPECT_LT(Clock::now() - start, std::chrono::seconds(3)) << "attempt " << attempt;
    }
  }
}

}  // namespace
}  // namespace caravan
