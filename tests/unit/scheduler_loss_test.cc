// CARAVAN_ELASTIC: a scheduler lost while nodes register with it (at
// start-up, or while the job regroups) is no failure: the nodes register
// again with the scheduler started at the same address, which forms the
// job or takes the regroup over. Real SchedulerLinks against schedulers in
// this process, so that each loss comes exactly where the test puts it.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/control/node_info.h"
#include "engine/control/scheduler_link.h"
#include "engine/control/scheduler_service.h"
#include "tests/unit/played_scheduler.h"

namespace caravan {
namespace {

// Takes registrations and answers none: the scheduler that is lost.
class SilentScheduler {
 public:
  SilentScheduler()
      : played_([this](int conn, ControlMessage&& m) {
          std::lock_guard<std::mutex> lock(mu_);
          played_.hub().admit(conn);
          if (m.head.type == wire::Type::kRegister) ++registered_;
          cv_.notify_all();
        }) {}
  int port() const { return played_.port(); }
  bool wait_registered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return registered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int registered_ = 0;
  PlayedScheduler played_;
};

JobConfig node_config(int port) {
  JobConfig c;
  c.root_uri = "127.0.0.1";
  c.root_port = port;
  c.connect_timeout_s = 10;
  c.resume_timeout_s = 20;  // how long a node registers again and again
  c.heartbeat_interval_s = 0;
  c.elastic = true;
  return c;
}

JobConfig scheduler_config(int port, int workers, int servers) {
  JobConfig c = node_config(port);
  c.role = Role::kScheduler;
  c.num_workers = workers;
  c.num_servers = servers;
  c.connect_timeout_s = 2;  // how long a regroup awaits nodes that do not come back
  return c;
}

NodeInfo node(Role role, int pid) {
  NodeInfo n;
  n.role = role;
  n.host = "127.0.0.1";
  n.van_address = "tcp://127.0.0.1:" + std::to_string(1000 + pid);
  n.pid = pid;
  return n;
}

// Worker `link` joins (on a thread of its own: the future) and registers
// with `lost`, which is then lost.
std::future<std::vector<NodeInfo>> join_then_lose(SchedulerLink& link,
                                                  std::unique_ptr<SilentScheduler>& lost) {
  auto joined = std::async(std::launch::async, [&link] {
    NodeInfo self = node(Role::kWorker, 100);
    return link.join(self);
  });
  EXPECT_TRUE(lost->wait_registered(1));
  lost.reset();
  return joined;
}

TEST(SchedulerLoss, ANodeRegistersAgainWithTheNextSchedulerAtStartUp) {
  auto lost = std::make_unique<SilentScheduler>();
  int port = lost->port();
  SchedulerLink link(node_config(port), nullptr);
  auto joined = join_then_lose(link, lost);
  EXPECT_EQ(joined.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
  SchedulerService next(scheduler_config(port, 1, 0));
  next.start();
  ASSERT_EQ(joined.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  std::vector<NodeInfo> table;
  ASSERT_NO_THROW(table = joined.get()) << link.failure();
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(next.wait_table().size(), 1u);
  link.close();
}

// Without CARAVAN_ELASTIC the loss still ends the join, naming the scheduler.
TEST(SchedulerLoss, WithoutElasticTheJoinFails) {
  auto lost = std::make_unique<SilentScheduler>();
  JobConfig c = node_config(lost->port());
  c.elastic = false;
  SchedulerLink link(c, nullptr);
  auto joined = join_then_lose(link, lost);
  ASSERT_EQ(joined.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    joined.get();
    ADD_FAILURE() << "the join went on without a scheduler";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lost the connection to the scheduler"), std::string::npos)
        << e.what();
  }
  link.close();
}

// One node's join into the next generation, as Node does it: a regroup
// heard while registering (CARAVAN_ERR_REGROUPED) means register again.
struct Joiner {
  Joiner(const JobConfig& c, NodeInfo node_info) : config(c), self(std::move(node_info)) {}
  std::vector<NodeInfo> join() {
    for (int tries = 0;; ++tries) {
      link = std::make_unique<SchedulerLink>(config, nullptr);
      NodeInfo me = self;
      try {
        auto table = link->join(me);
        self = me;
        return table;
      } catch (const Error& e) {
        if (e.code() != CARAVAN_ERR_REGROUPED || tries == 4) throw;
        link->close();
      }
    }
  }
  JobConfig config;
  NodeInfo self;
  std::unique_ptr<SchedulerLink> link;
};

// Server 0 and workers 0 and 1 form generation 0; worker 1 leaves, and the
// scheduler regroups the job, and is lost before the others registered
// again. They register with the scheduler started next, which takes the
// regroup over: it awaits the three nodes of generation 0, goes on
// without worker 1 after its CARAVAN_CONNECT_TIMEOUT, and sends both a
// table of the two, in a generation past the lost scheduler's.
TEST(SchedulerLoss, TheNextSchedulerTakesARegroupUnderWayOver) {
  int port = 0;
  {
    SilentScheduler probe;  // a free port for both schedulers
    port = probe.port();
  }
  auto first = std::make_unique<SchedulerService>(scheduler_config(port, 2, 1));
  first->start();
  JobConfig c = node_config(port);
  std::vector<NodeInfo> gen0{node(Role::kServer, 200), node(Role::kWorker, 100),
                             node(Role::kWorker, 101)};
  std::vector<std::unique_ptr<SchedulerLink>> links;
  std::vector<std::future<std::vector<NodeInfo>>> joined;
  for (size_t i = 0; i < gen0.size(); ++i)
    links.push_back(std::make_unique<SchedulerLink>(c, nullptr));
  for (size_t i = 0; i < gen0.size(); ++i) {
    joined.push_back(std::async(std::launch::async, [&, i] {
      NodeInfo self = gen0[i];
      return links[i]->join(self);
    }));
  }
  for (auto& j : joined) ASSERT_EQ(j.get().size(), 3u);
  int generation = links[0]->generation();
  links[2]->leave_job("worker 1 leaves");
  for (int i : {0, 1}) {
    EXPECT_TRUE(links[i]->wait_regrouped(std::chrono::seconds(10))) << links[i]->failure();
    links[i]->close();
  }
  links[2]->close();
  first.reset();  // lost while the job regroups

  std::vector<std::unique_ptr<Joiner>> next_gen;
  std::vector<std::future<std::vector<NodeInfo>>> rejoined;
  for (int i : {0, 1}) {
    NodeInfo self = gen0[i];
    self.last_generation = generation;
    self.last_generation_nodes = 3;
    next_gen.push_back(std::make_unique<Joiner>(c, self));
    rejoined.push_back(
        std::async(std::launch::async, [j = next_gen.back().get()] { return j->join(); }));
  }
  SchedulerService next(scheduler_config(port, 2, 1));
  next.start();
  auto ended = std::async(std::launch::async, [&] {
    next.wait_table();
    return next.finish();
  });
  for (auto& r : rejoined) {
    ASSERT_EQ(r.wait_for(std::chrono::seconds(15)), std::future_status::ready);
    std::vector<NodeInfo> table;
    ASSERT_NO_THROW(table = r.get());
    EXPECT_EQ(table.size(), 2u);
  }
  for (auto& j : next_gen) EXPECT_GT(j->link->generation(), generation + 1);
  // The job goes on, and ends, with the two.
  std::vector<std::future<bool>> passed;
  for (auto& j : next_gen)
    passed.push_back(
        std::async(std::launch::async, [l = j->link.get()] { return l->barrier(0, true, 10); }));
  for (auto& p : passed) EXPECT_NO_THROW(p.get());
  for (auto& j : next_gen) j->link->close();
  EXPECT_EQ(ended.get(), 0);
}

}  // namespace
}  // namespace caravan
