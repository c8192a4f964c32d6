// The worker's send-order policies: FIFO, and priority with credit.
#include "engine/worker/send_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace caravan {
namespace {

// Adds one pending partition that records its label when started.
void add(SendPolicy& s, std::vector<std::string>& log, const std::string& label, int priority,
         uint64_t sequence) {
  s.add(PendingSend{priority, sequence, [&log, label] { log.push_back(label); }});
}

// Starts whatever the policy lets go now.
void pump(SendPolicy& s) {
  while (auto p = s.next()) p->start();
}

TEST(SendPolicy, FifoSendsEverythingInSubmissionOrder) {
  auto s = make_send_policy(0);
  std::vector<std::string> log;
  add(*s, log, "low#0", 0, 0);
  add(*s, log, "low#1", 0, 1);
  add(*s, log, "high#0", 9, 2);
  pump(*s);
  EXPECT_EQ(log, (std::vector<std::string>{"low#0", "low#1", "high#0"}));
}

// The issue's case: credit 1, a high-priority tensor submitted after a
// low-priority one goes out before the low one's remaining partitions.
TEST(SendPolicy, CreditOneLetsALateHighPriorityTensorOvertake) {
  auto s = make_send_policy(1);
  std::vector<std::string> log;
  for (int i = 0; i < 3; ++i) add(*s, log, "low#" + std::to_string(i), 0, static_cast<uint64_t>(i));
  pump(*s);
  EXPECT_EQ(log, (std::vector<std::string>{"low#0"})) << "credit 1 holds the rest back";
  for (int i = 0; i < 2; ++i)
    add(*s, log, "high#" + std::to_string(i), 5, static_cast<uint64_t>(3 + i));
  pump(*s);
  EXPECT_EQ(log.size(), 1u) << "nothing more until an answer frees the credit";
  for (int answered = 0; answered < 4; ++answered) {
    s->finished();
    pump(*s);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"low#0", "high#0", "high#1", "low#1", "low#2"}));
  EXPECT_FALSE(s->next().has_value());
}

TEST(SendPolicy, CreditBoundsPartitionsInFlight) {
  auto s = make_send_policy(3);
  std::vector<std::string> log;
  for (int i = 0; i < 10; ++i) add(*s, log, std::to_string(i), 0, static_cast<uint64_t>(i));
  pump(*s);
  EXPECT_EQ(log.size(), 3u);
  s->finished();
  pump(*s);
  EXPECT_EQ(log.size(), 4u);
  for (int i = 0; i < 10; ++i) {
    s->finished();
    pump(*s);
  }
  EXPECT_EQ(log.size(), 10u);
  // Equal priorities keep submission order.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(log[static_cast<size_t>(i)], std::to_string(i));
}

TEST(SendPolicy, NegativePrioritiesOrderToo) {
  // BytePS gives earlier layers lower (more negative) priorities.
  auto s = make_send_policy(1);
  std::vector<std::string> log;
  add(*s, log, "busy", 100, 0);
  pump(*s);
  add(*s, log, "p-3", -3, 1);
  add(*s, log, "p-1", -1, 2);
  add(*s, log, "p-2", -2, 3);
  for (int i = 0; i < 3; ++i) {
    s->finished();
    pump(*s);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"busy", "p-1", "p-2", "p-3"}));
}

}  // namespace
}  // namespace caravan
