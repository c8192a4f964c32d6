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

}  // namespace
}  // namespace caravan
