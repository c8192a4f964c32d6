#include "engine/worker/operation.h"

#include <thread>
#include <utility>

#include "caravan/caravan.h"
#include "engine/base/dtype.h"
#include "engine/base/timeline.h"

namespace caravan {

using Then = PartitionFlight::Then;

namespace {
// wait() polls before it blocks for operations of at most kPollBytes, for
// at most kPollFor.
constexpr size_t kPollBytes = 64 * 1024;
constexpr auto kPollFor = std::chrono::milliseconds(1);
}  // namespace

Operation::Operation(TensorPlan& plan, char* data, int root, int my_rank, int priority,
                     uint64_t round, char* out)
    : plan_(plan),
      data_(data),
      out_(out),
      root_(root),
      my_rank_(my_rank),
      priority_(priority),
      round_(round),
      submitted_us_(Timeline::now_us()),
      flights_(plan.partitions.size()),
      counted_(plan.partitions.size(), false),
      open_(plan.partitions.size()) {}

char* Operation::at(size_t index) const {
  // An all-to-all worker sends a block or gets one, never both.
  return (out_ && gets_values(index) ? out_ : data_) + plan_.partitions[index].offset;
}

int Operation::source_of(size_t index) const {
  switch (plan_.kind) {
    case OpKind::kBroadcast:
      return root_;
    case OpKind::kAllgather:
    case OpKind::kAlltoall:
      return plan_.partitions[index].owner;
    default:
      return kSum;
  }
}

bool Operation::sends_values(size_t index) const {
  switch (plan_.kind) {
    case OpKind::kBroadcast:
    case OpKind::kAllgather:
    case OpKind::kAlltoall:
      return source_of(index) == my_rank_;
    default:
      return true;
  }
}

bool Operation::gets_values(size_t index) const {
  switch (plan_.kind) {
    case OpKind::kBroadcast:
    case OpKind::kAllgather:
    case OpKind::kAlltoall:
      return source_of(index) != my_rank_;
    case OpKind::kReduceScatter:
      return plan_.partitions[index].owner == my_rank_;
    default:
      return true;
  }
}

bool Operation::begin_send(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abandoned_) return false;
  flights_[index].lending();
  flights_[index].moments.send_us = Timeline::now_us();
  return true;
}

bool Operation::on_wire(size_t index, bool lent) {
  std::lock_guard<std::mutex> lock(mu_);
  // A caller that gave up while the lend was made did not see it: the
  // sender takes it back.
  if (abandoned_) return false;
  flights_[index].lent = lent;
  flights_[index].on_wire();
  return true;
}

Then Operation::sent(size_t index, bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  flights_[index].moments.sent_us = Timeline::now_us();
  return flights_[index].sent(ok);
}

Then Operation::answered(size_t index, KVMessage& answer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!flights_[index].done()) flights_[index].moments.answer_us = Timeline::now_us();
  return flights_[index].answered(answer);
}

std::unique_ptr<KVMessage> Operation::take_answer(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  return flights_[index].take_answer();
}

void Operation::fail(int code, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (code_ != 0) return;
  code_ = code;
  error_ = std::string(what()) + " of '" + plan_.name + "' failed: " + why;
}

bool Operation::finish(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  if (counted_[index]) return false;
  counted_[index] = true;
  flights_[index].end();
  return --open_ == 0;
}

bool Operation::settle_lend(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  bool lent = flights_[index].lent;
  flights_[index].lent = false;
  return lent;
}

std::vector<uint64_t> Operation::take_lends() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < flights_.size(); ++i) {
    if (!flights_[i].lent) continue;
    flights_[i].lent = false;
    keys.push_back(plan_.partitions[i].key);
  }
  return keys;
}

bool Operation::abandoned() const {
  std::lock_guard<std::mutex> lock(mu_);
  return abandoned_;
}

void Operation::mark_queued(size_t index, int64_t us) {
  std::lock_guard<std::mutex> lock(mu_);
  flights_[index].moments.queued_us = us;
}

PartitionFlight::Moments Operation::moments(size_t index) const {
  std::lock_guard<std::mutex> lock(mu_);
  return flights_[index].moments;
}

void Operation::complete() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  finished_.store(true, std::memory_order_release);
  cv_.notify_all();
}

bool Operation::ok() const {
  std::lock_guard<std::mutex> lock(mu_);
  return code_ == 0;
}

int Operation::poll(std::string* error) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) return 0;
  if (code_ != 0) {
    *error = error_;
    return code_;
  }
  return 1;
}

int Operation::wait(std::chrono::seconds timeout, std::string* error,
                    const std::function<std::string(const std::map<int, int>&)>& describe) {
  // A small operation's answer lands within a millisecond or so; waking a
  // thread blocked on the condition variable then costs tens of
  // microseconds on a busy machine, so its waiter polls first, yielding
  // the core to the threads that finish it (the receiving thread, and on
  // one machine the server's). A large one's waiter blocks at once: its
  // polling took cycles from those threads and slowed it (docs/benchmarks.md).
  if (plan_.count * dtype_size(plan_.dtype) <= kPollBytes)
    for (const auto until = Clock::now() + kPollFor;
         !finished_.load(std::memory_order_acquire) && Clock::now() < until;)
      std::this_thread::yield();
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_; })) {
    abandoned_ = true;
    std::map<int, int> unanswered;  // server rank -> partitions
    for (size_t i = 0; i < flights_.size(); ++i)
      if (!flights_[i].answered() && !flights_[i].done()) unanswered[plan_.partitions[i].server]++;
    lock.unlock();
    *error = describe(unanswered);
    return CARAVAN_ERR_TIMEOUT;
  }
  if (code_ != 0) *error = error_;
  return code_;
}

}  // namespace caravan
