// SimpleApp: requests of an integer head and a string body to any node or
// group, the scheduler included, each answered once by every recipient.
#ifndef PS_SIMPLE_APP_H_
#define PS_SIMPLE_APP_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "ps/internal/customer.h"
#include "ps/internal/message.h"
#include "ps/internal/postoffice.h"

namespace ps {

struct SimpleData {
  int head;
  std::string body;
  int sender;
  int timestamp;
  int customer_id;
};

class SimpleApp {
 public:
  // Registers (app_id, customer_id) with the Postoffice; call after Start.
  explicit SimpleApp(int app_id, int customer_id) : SimpleApp() {
    using namespace std::placeholders;
    obj_ = new Customer(app_id, customer_id, std::bind(&SimpleApp::Process, this, _1));
    MarkReady();
  }
  virtual ~SimpleApp() {
    delete obj_;
    obj_ = nullptr;
  }

  // Sends head/body to recv_id (a node id or a group); returns the
  // timestamp to Wait() on.
  virtual int Request(int req_head, const std::string& req_body, int recv_id) {
    int ts = obj_->NewRequest(recv_id);
    Postoffice* po = obj_->postoffice();
    for (int id : po->GetNodeIDs(recv_id)) {
      // With DMLC_GROUP_SIZE, requests to the servers go to the servers of
      // this node's instance, as KVWorker's do.
      if (recv_id == kServerGroup && Postoffice::IDtoRank(id) % po->group_size() != po->instance_idx())
        continue;
      Message msg;
      msg.meta.head = req_head;
      msg.meta.body = req_body;
      msg.meta.timestamp = ts;
      msg.meta.request = true;
      msg.meta.simple_app = true;
      msg.meta.app_id = obj_->app_id();
      msg.meta.customer_id = obj_->customer_id();
      msg.meta.recver = id;
      obj_->postoffice()->van()->Send(msg);
    }
    return ts;
  }

  // Blocks until every recipient of the request answered.
  virtual void Wait(int timestamp) { obj_->WaitRequest(timestamp); }

  // Answers a received request.
  virtual void Response(const SimpleData& recv_req, const std::string& res_body = "") {
    Message msg;
    msg.meta.head = recv_req.head;
    msg.meta.body = res_body;
    msg.meta.timestamp = recv_req.timestamp;
    msg.meta.request = false;
    msg.meta.simple_app = true;
    msg.meta.app_id = obj_->app_id();
    msg.meta.customer_id = recv_req.customer_id;
    msg.meta.recver = recv_req.sender;
    obj_->postoffice()->van()->Send(msg);
  }

  using Handle = std::function<void(const SimpleData& recved, SimpleApp* app)>;
  // Runs for every request; the default answers with an empty body.
  virtual void set_request_handle(const Handle& request_handle) {
    CHECK(request_handle) << "invalid request handle";
    std::lock_guard<std::mutex> lock(gate_mu_);
    request_handle_ = request_handle;
  }
  // Runs for every response; the default does nothing.
  virtual void set_response_handle(const Handle& response_handle) {
    CHECK(response_handle) << "invalid response handle";
    std::lock_guard<std::mutex> lock(gate_mu_);
    response_handle_ = response_handle;
  }

  virtual Customer* get_customer() { return obj_; }

 protected:
  SimpleApp() : obj_(nullptr) {
    request_handle_ = [](const SimpleData& recved, SimpleApp* app) { app->Response(recved); };
    response_handle_ = [](const SimpleData&, SimpleApp*) {};
  }

  // Messages can arrive as soon as the Customer exists, before the
  // constructor stored obj_: handling waits until the app is ready.
  void MarkReady() {
    std::lock_guard<std::mutex> lock(gate_mu_);
    ready_ = true;
    gate_cv_.notify_all();
  }
  // Waits until the app is constructed and `pred` holds (for example: a
  // handle was set), at most `seconds`; false on timeout.
  template <typename Pred>
  bool WaitReady(Pred pred, int seconds = 60) {
    std::unique_lock<std::mutex> lock(gate_mu_);
    return gate_cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return ready_ && pred(); });
  }
  void NotifyGate() {
    std::lock_guard<std::mutex> lock(gate_mu_);
    gate_cv_.notify_all();
  }

  virtual void Process(const Message& msg) {
    CHECK(WaitReady([] { return true; })) << "SimpleApp never finished construction";
    SimpleData recv;
    recv.sender = msg.meta.sender;
    recv.head = msg.meta.head;
    recv.body = msg.meta.body;
    recv.timestamp = msg.meta.timestamp;
    recv.customer_id = msg.meta.customer_id;
    // Called in place, never copied, so a stateful handle keeps its state.
    Handle& handle = msg.meta.request ? request_handle_ : response_handle_;
    CHECK(handle);
    handle(recv, this);
  }

  Customer* obj_;
  std::mutex gate_mu_;

 private:
  std::condition_variable gate_cv_;
  bool ready_ = false;
  Handle request_handle_;
  Handle response_handle_;
};

}  // namespace ps

#endif  // PS_SIMPLE_APP_H_
