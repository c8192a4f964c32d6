// ps::Customer: request numbering, response counting, and the handler
// thread of one application object.
#include "ps/internal/customer.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "engine/base/log.h"
#include "engine/base/thread_name.h"
#include "engine/pslite/ps_runtime.h"
#include "ps/internal/postoffice.h"

namespace ps {

struct Customer::State {
  caravan::psl::Member* member = nullptr;
  int app_id = 0;
  int customer_id = 0;
  RecvHandle handle;
  std::mutex mu;
  std::condition_variable cv;  // responses and the queue
  std::deque<Message> queue;
  bool stopping = false;
  int next_timestamp = 0;
  struct Tracker {
    int expected = 0;
    int received = 0;
    int recver = 0;
  };
  std::unordered_map<int, Tracker> trackers;
  std::thread thread;
};

namespace {

// Without a node named: the worker node that Start(customer_id) made
// (dmlc/ps-lite), else worker node 0 (a JOINT process's worker side), else
// the process's first.
Postoffice* NodeOfCustomer(int customer_id) {
  auto& rt = caravan::psl::Runtime::get();
  Postoffice* first = Postoffice::Get();
  if (first->member()->role() == caravan::Role::kScheduler) return first;
  // A worker process's nodes, or a JOINT process's worker side.
  if (auto* own = rt.find(caravan::Role::kWorker, customer_id)) return own->postoffice();
  if (auto* node0 = rt.find(caravan::Role::kWorker, 0)) return node0->postoffice();
  return first;
}

}  // namespace

Customer::Customer(int app_id, int customer_id, const RecvHandle& recv_handle)
    : Customer(app_id, customer_id, recv_handle, NodeOfCustomer(customer_id)) {}

Customer::Customer(int app_id, int customer_id, const RecvHandle& recv_handle,
                   Postoffice* postoffice)
    : state_(new State) {
  CHECK_NOTNULL(postoffice);
  state_->member = postoffice->member();
  state_->app_id = app_id;
  state_->customer_id = customer_id;
  state_->handle = recv_handle;
  State* s = state_.get();
  s->thread = std::thread([s] {
    caravan::name_this_thread("ps-customer");
    std::unique_lock<std::mutex> lock(s->mu);
    for (;;) {
      s->cv.wait(lock, [s] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty()) return;  // stopping, and everything handled
      Message msg = std::move(s->queue.front());
      s->queue.pop_front();
      lock.unlock();
      try {
        s->handle(msg);
      } catch (const std::exception& e) {
        // ps-lite would die here too (a throw on its thread); going quietly
        // on would leave the sender waiting for an answer that never comes.
        // Exiting drops this node's control connection, so every other node
        // learns at once which node failed and why.
        caravan::Log::write(CARAVAN_LOG_FATAL, "ps: the handler of app " +
                                                   std::to_string(s->app_id) +
                                                   " failed on a message from node " +
                                                   std::to_string(msg.meta.sender) + ": " +
                                                   e.what() + "; ending this process");
        std::_Exit(1);
      }
      bool response = !msg.meta.request;
      int timestamp = msg.meta.timestamp;
      // The message goes before its response counts: a waiter may reuse
      // memory it still views (a shared-memory slot) as soon as Wait ends.
      msg = Message();
      lock.lock();
      if (response) {
        auto it = s->trackers.find(timestamp);
        if (it != s->trackers.end()) it->second.received++;
        s->cv.notify_all();
      }
    }
  });
  state_->member->add_customer(this);
}

Customer::~Customer() {
  state_->member->remove_customer(this);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

int Customer::app_id() const { return state_->app_id; }
int Customer::customer_id() const { return state_->customer_id; }
Postoffice* Customer::postoffice() const { return state_->member->postoffice(); }

int Customer::NewRequest(int recver) {
  int expected = static_cast<int>(state_->member->node_ids(recver).size());
  // With DMLC_GROUP_SIZE, a node's requests to the servers go to the
  // servers of its own instance, one per group (bytedance/ps-lite).
  if (recver == kServerGroup) expected /= state_->member->group_size();
  std::lock_guard<std::mutex> lock(state_->mu);
  int ts = state_->next_timestamp++;
  state_->trackers[ts] = State::Tracker{expected, 0, recver};
  return ts;
}

void Customer::WaitRequest(int timestamp) {
  auto& rt = *state_->member;
  int timeout = rt.op_timeout_s();
  std::unique_lock<std::mutex> lock(state_->mu);
  auto it = state_->trackers.find(timestamp);
  if (it == state_->trackers.end())
    throw Error("ps: Wait(" + std::to_string(timestamp) + "): no such request of app " +
                std::to_string(state_->app_id));
  std::string failure;
  bool done = state_->cv.wait_for(lock, std::chrono::seconds(timeout), [&] {
    failure = rt.failure();
    return it->second.received >= it->second.expected || !failure.empty();
  });
  State::Tracker t = it->second;
  // Kept after completion: ps-lite programs may wait on a request twice.
  if (t.received >= t.expected) return;
  std::string what = "ps: request " + std::to_string(timestamp) + " of app " +
                     std::to_string(state_->app_id) + " to node/group " + std::to_string(t.recver) +
                     " got " + std::to_string(t.received) + " of " + std::to_string(t.expected) +
                     " responses";
  what += done ? "; the job failed: " + failure
               : " within " + std::to_string(timeout) + " s (CARAVAN_OP_TIMEOUT)";
  caravan::Log::write(CARAVAN_LOG_ERROR, what);
  throw Error(what);
}

int Customer::NumResponse(int timestamp) {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->trackers.find(timestamp);
  return it == state_->trackers.end() ? 0 : it->second.received;
}

void Customer::AddResponse(int timestamp, int num) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->trackers.find(timestamp);
    if (it != state_->trackers.end()) it->second.received += num;
  }
  state_->cv.notify_all();
}

void Customer::Accept(const Message& recved) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back(recved);
  }
  state_->cv.notify_all();
}

}  // namespace ps
