// A Customer is one application object's mailbox: it numbers the object's
// requests, counts their responses, and runs the object's handler for every
// message on a thread of its own, so handlers may block without stalling
// the network.
#ifndef PS_INTERNAL_CUSTOMER_H_
#define PS_INTERNAL_CUSTOMER_H_

// ps-lite's customer.h brings in the threading headers, and its programs
// (test_kv_app_multi_workers: std::thread) use them through ps/ps.h alone.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ps/internal/message.h"

namespace ps {

class Postoffice;

class Customer {
 public:
  using RecvHandle = std::function<void(const Message& recved)>;

  // Registers with a node of this process; messages that arrived for
  // (app_id, customer_id) before it existed are delivered now. Without a
  // Postoffice: in a worker process, the node that Start(customer_id) made
  // if there is one, else Postoffice::Get().
  Customer(int app_id, int customer_id, const RecvHandle& recv_handle);
  Customer(int app_id, int customer_id, const RecvHandle& recv_handle, Postoffice* postoffice);
  // Stops the handler thread after the messages already queued.
  ~Customer();
  Customer(const Customer&) = delete;
  Customer& operator=(const Customer&) = delete;

  int app_id() const;
  int customer_id() const;
  // The node this customer sends and receives through.
  Postoffice* postoffice() const;

  // A new request to `recver` (a node id or a group); returns its timestamp.
  // It expects one response per node of the group.
  int NewRequest(int recver);
  // Blocks until every response of `timestamp` arrived. A lost node or
  // CARAVAN_OP_TIMEOUT ends the wait with ps::Error naming who did not
  // answer.
  void WaitRequest(int timestamp);
  int NumResponse(int timestamp);
  void AddResponse(int timestamp, int num = 1);

  // Queues a received message for the handler thread (engine use).
  void Accept(const Message& recved);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ps

#endif  // PS_INTERNAL_CUSTOMER_H_
