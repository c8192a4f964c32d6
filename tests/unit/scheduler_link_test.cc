// SchedulerLink against a scheduler played by the test (a ControlHub that
// listens): the orders a real scheduler makes rare can be held here on
// purpose, so each test sees the bad order every time.
#include "engine/control/scheduler_link.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "engine/control/node_info.h"
#include "engine/control/scheduler_service.h"
#include "tests/unit/played_scheduler.h"

namespace caravan {
namespace {

using Clock = std::chrono::steady_clock;

// Takes one node's registration, sends it a node table of itself, and keeps
// each ABORT it receives; answers an ABORT (as the scheduler does, to every
// node) only when the test says so.
class HeldScheduler {
 public:
  HeldScheduler()
      : played_([this](int conn, ControlMessage&& m) { on_message(conn, std::move(m)); }) {}

  int port() const { return played_.port(); }

  // The ABORT's text once it arrived, or "" after `timeout`.
  std::string wait_for_abort(std::chrono::seconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !abort_text_.empty(); });
    return abort_text_;
  }

  // The job's ABORT to the node, as SchedulerService::abort_job sends it.
  void answer(const std::string& text) {
    int conn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      conn = conn_;
    }
    wire::Header h;
    h.type = wire::Type::kAbort;
    h.sender = kSchedulerId;
    ASSERT_TRUE(hub_.send(conn, h, std::vector<uint8_t>(text.begin(), text.end())));
  }

 private:
  void on_message(int conn, ControlMessage&& m) {
    std::lock_guard<std::mutex> lock(mu_);
    conn_ = conn;
    hub_.admit(conn);
    if (m.head.type == wire::Type::kRegister) {
      NodeInfo n = m.node;
      n.id = worker_id(0);
      n.rank = 0;
      n.settings.clear();
      wire::Header h;
      h.type = wire::Type::kNodeTable;
      h.sender = kSchedulerId;
      h.recipient = n.id;
      hub_.send(conn, h, encode_node_table({n}));
    } else if (m.head.type == wire::Type::kAbort) {
      abort_text_ = m.text;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int conn_ = -1;
  std::string abort_text_;
  // Last: its thread starts once the rest is built and stops before it goes.
  PlayedScheduler played_;
  ControlHub& hub_ = played_.hub();
};

JobConfig config_for(int port) {
  JobConfig c;
  c.root_uri = "127.0.0.1";
  c.root_port = port;
  c.connect_timeout_s = 10;
  c.heartbeat_interval_s = 0;  // nothing but what the test sends
  return c;
}

NodeInfo worker_self() {
  NodeInfo self;
  self.role = Role::kWorker;
  self.host = "127.0.0.1";
  self.van_address = "tcp://127.0.0.1:1";
  self.pid = 1;
  return self;
}

// The node that ends the job stays until the scheduler has answered: a node
// that returned at once and closed its connection could have its reason
// overtaken by the close (the others then blamed it, not the cause).
TEST(SchedulerLink, EndJobReturnsOnlyOnceTheSchedulerAnswered) {
  HeldScheduler scheduler;
  SchedulerLink link(config_for(scheduler.port()), [](const std::string&) {});
  NodeInfo self = worker_self();
  link.join(self);

  std::promise<void> answered;
  std::shared_future<void> answered_f = answered.get_future().share();
  auto ended = std::async(std::launch::async, [&] {
    link.end_job("local rank 1 of machine 0 (pid 7) ended without caravan_shutdown()");
    // Whether the answer had been given when end_job returned.
    return answered_f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  EXPECT_EQ(scheduler.wait_for_abort(std::chrono::seconds(10)),
            "local rank 1 of machine 0 (pid 7) ended without caravan_shutdown()");
  answered.set_value();
  scheduler.answer("worker 0 (pid 1 at 127.0.0.1) ended the job: local rank 1 ...");
  ASSERT_EQ(ended.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(ended.get()) << "end_job returned before the scheduler answered";
  EXPECT_NE(link.failure().find("ended the job: local rank 1"), std::string::npos)
      << link.failure();
}

// A scheduler that never answers holds the node only for kEndJobDeadline.
TEST(SchedulerLink, EndJobGivesUpOnASilentSchedulerAtItsDeadline) {
  HeldScheduler scheduler;
  SchedulerLink link(config_for(scheduler.port()), [](const std::string&) {});
  NodeInfo self = worker_self();
  link.join(self);
  auto start = Clock::now();
  link.end_job("why");
  auto waited = Clock::now() - start;
  EXPECT_EQ(scheduler.wait_for_abort(std::chrono::seconds(10)), "why");
  EXPECT_GE(waited, SchedulerLink::kEndJobDeadline);
  EXPECT_LT(waited, SchedulerLink::kEndJobDeadline + std::chrono::seconds(5));
  EXPECT_EQ(link.failure(), "");
}

// A link that is closing does not wait for an answer it will never read.
TEST(SchedulerLink, EndJobAfterCloseReturnsAtOnce) {
  HeldScheduler scheduler;
  SchedulerLink link(config_for(scheduler.port()), [](const std::string&) {});
  NodeInfo self = worker_self();
  link.join(self);
  link.close();
  auto start = Clock::now();
  link.end_job("why");
  EXPECT_LT(Clock::now() - start, SchedulerLink::kEndJobDeadline);
}

// A scheduler started again that answers a node's REPORT with a regroup.
class RegroupsWhenReported {
 public:
  explicit RegroupsWhenReported(int port)
      : played_([this](int conn, ControlMessage&& m) { on_message(conn, std::move(m)); }, port) {}

 private:
  void on_message(int conn, ControlMessage&& m) {
    ControlHub& hub = played_.hub();
    hub.admit(conn);
    if (m.head.type != wire::Type::kReport) return;
    wire::Header h;
    h.type = wire::Type::kAbort;
    h.sender = kSchedulerId;
    h.cmd = kAbortRegroup;
    std::string text = "lost server 1 (pid 9)";
    hub.send(conn, h, std::vector<uint8_t>(text.begin(), text.end()));
  }
  PlayedScheduler played_;
};

// With no scheduler (lost, CARAVAN_ELASTIC), a node that lost a peer waits
// for the next scheduler's word on it rather than giving up after the
// moment it allows a scheduler that runs: here the next one regroups the
// job as soon as the node reports to it.
TEST(SchedulerLink, WaitRegroupedWaitsForTheNextScheduler) {
  auto first = std::make_unique<HeldScheduler>();
  JobConfig c = config_for(first->port());
  c.elastic = true;
  c.resume_timeout_s = 30;
  SchedulerLink link(c, nullptr);
  NodeInfo self = worker_self();
  link.join(self);
  int port = first->port();
  first.reset();  // lost: the link reports to whoever listens there next
  auto regrouped = std::async(std::launch::async,
                              [&] { return link.wait_regrouped(std::chrono::milliseconds(100)); });
  EXPECT_EQ(regrouped.wait_for(std::chrono::seconds(1)), std::future_status::timeout);
  RegroupsWhenReported next(port);
  ASSERT_EQ(regrouped.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(regrouped.get()) << link.failure();
  link.close();
}

// Two workers at a barrier; the scheduler that has the job tells worker 0
// it completed and is lost before it tells worker 1. Worker 1 sends the
// barrier again to the scheduler that takes the job over, which must let
// it through (worker 0's report says it passed), not wait for worker 0 to
// arrive at a barrier it has left behind.
class LostAtBarrierCompletion {
 public:
  LostAtBarrierCompletion()
      : played_([this](int conn, ControlMessage&& m) { on_message(conn, std::move(m)); }) {}
  int port() const { return played_.port(); }

 private:
  void on_message(int conn, ControlMessage&& m) {
    std::lock_guard<std::mutex> lock(mu_);
    hub_.admit(conn);
    if (m.head.type == wire::Type::kRegister) {
      NodeInfo n = m.node;
      n.rank = static_cast<int>(workers_.size());
      n.id = worker_id(n.rank);
      n.settings.clear();
      workers_.emplace_back(conn, n);
      if (workers_.size() < 2) return;
      std::vector<NodeInfo> table{workers_[0].second, workers_[1].second};
      for (auto& [c, w] : workers_) {
        wire::Header h;
        h.type = wire::Type::kNodeTable;
        h.sender = kSchedulerId;
        h.recipient = w.id;
        hub_.send(c, h, encode_node_table(table));
      }
    } else if (m.head.type == wire::Type::kBarrier && ++arrived_ == 2) {
      wire::Header h;
      h.type = wire::Type::kBarrierDone;
      h.sender = kSchedulerId;
      h.cmd = m.head.cmd;
      h.flags = m.head.flags & wire::kFinal;
      for (auto& [c, w] : workers_)
        if (w.pid == 100) hub_.send(c, h, {});  // links[0]'s; then nothing: lost
    }
  }

  std::mutex mu_;
  std::vector<std::pair<int, NodeInfo>> workers_;  // conn, node
  int arrived_ = 0;
  PlayedScheduler played_;
  ControlHub& hub_ = played_.hub();
};

// Two links (pids 100 and 101) that joined the scheduler `c` names.
std::vector<std::unique_ptr<SchedulerLink>> join_two_workers(const JobConfig& c) {
  std::vector<std::unique_ptr<SchedulerLink>> links;
  for (int i = 0; i < 2; ++i) links.push_back(std::make_unique<SchedulerLink>(c, nullptr));
  std::vector<std::future<void>> joined;
  for (int i = 0; i < 2; ++i) {
    joined.push_back(std::async(std::launch::async, [&, i] {
      NodeInfo self = worker_self();
      self.pid = 100 + i;
      links[i]->join(self);
    }));
  }
  for (auto& j : joined) j.get();
  return links;
}

TEST(SchedulerLink, ABarrierCompletedForOthersEndsAfterATakeover) {
  auto lost = std::make_unique<LostAtBarrierCompletion>();
  JobConfig c = config_for(lost->port());
  c.elastic = true;
  c.resume_timeout_s = 30;  // how long a link tries to report to a new scheduler
  auto links = join_two_workers(c);
  auto barrier = [&](int i) {
    return std::async(std::launch::async, [&, i] { links[i]->barrier(kWorkerGroup, false, 20); });
  };
  auto passed0 = barrier(0);
  auto passed1 = barrier(1);
  ASSERT_EQ(passed0.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  passed0.get();
  EXPECT_EQ(passed1.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  lost.reset();  // the scheduler that had the job
  JobConfig sc = c;
  sc.role = Role::kScheduler;
  sc.num_workers = 2;
  sc.num_servers = 0;
  SchedulerService next(sc);
  next.start();
  auto start = Clock::now();
  ASSERT_EQ(passed1.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  EXPECT_NO_THROW(passed1.get());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  // Both go on together at the next barrier.
  auto next0 = barrier(0);
  auto next1 = barrier(1);
  EXPECT_NO_THROW(next0.get());
  EXPECT_NO_THROW(next1.get());
  for (auto& l : links) l->close();
}

// The same at the shutdown barrier: worker 0 heard it complete and left,
// and reports nothing. Worker 1 reports that it waits in the shutdown
// barrier; the next scheduler, once worker 0's report is overdue, lets it
// through: the job is over, not a loss to regroup without.
TEST(SchedulerLink, AShutdownCompletedForOthersEndsAfterATakeover) {
  auto lost = std::make_unique<LostAtBarrierCompletion>();
  JobConfig c = config_for(lost->port());
  c.elastic = true;
  c.resume_timeout_s = 30;
  auto links = join_two_workers(c);
  auto shutdown = [&](int i) {
    return std::async(std::launch::async, [&, i] { links[i]->barrier(0, true, 30); });
  };
  auto passed0 = shutdown(0);
  auto passed1 = shutdown(1);
  ASSERT_EQ(passed0.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  passed0.get();
  links[0]->close();  // it left
  EXPECT_EQ(passed1.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  lost.reset();
  JobConfig sc = c;
  sc.role = Role::kScheduler;
  sc.num_workers = 2;
  sc.num_servers = 0;
  sc.connect_timeout_s = 2;  // how long it waits for worker 0's report
  SchedulerService next(sc);
  next.start();
  // As the scheduler's main thread does: the reports' deadline is judged there.
  auto table = std::async(std::launch::async, [&] { return next.wait_table(); });
  ASSERT_EQ(passed1.wait_for(std::chrono::seconds(15)), std::future_status::ready);
  EXPECT_NO_THROW(passed1.get()) << links[1]->failure();
  EXPECT_EQ(table.get().size(), 1u);
  links[1]->close();
  EXPECT_EQ(next.finish(), 0);
}

}  // namespace
}  // namespace caravan
