// One ps-lite node of this process: joins the job in its role, routes
// messages to its Customers by (app_id, customer_id), and converts between
// ps::Message and the engine's KVMessage without copying values. A process
// holds several when it runs several worker customers (dmlc/ps-lite), node
// instances (DMLC_GROUP_SIZE) or a JOINT worker and server
// (bytedance/ps-lite): each has its own engine Node and connections.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/control/scheduler_service.h"
#include "engine/node/node.h"
#include "engine/pslite/ps_customers.h"
#include "engine/pslite/ps_shm.h"
#include "ps/internal/customer.h"
#include "ps/internal/postoffice.h"
#include "ps/internal/van.h"
#include "ps/range.h"

namespace caravan::psl {

class Member final : public ps::Van {
 public:
  // `index`: this node among the process's nodes of its role; `instance`:
  // its place in a DMLC_GROUP_SIZE group of `group_size` (0 and 1 for a
  // worker customer's own node). With `role_from_env`, `role` is only a
  // guess: start() takes DMLC_ROLE's, refusing a bad one by name.
  Member(Role role, int index, int instance, int group_size, bool role_from_env);

  // Joins the job (the first call; later ones wait for it). `rank`: the
  // rank asked for, -1 for any.
  void start(int rank, bool do_barrier);
  // Leaves the job: the barrier when asked, the engine's shutdown barrier,
  // then the exit callback. `with_idle_siblings` (node 0 of a role): first
  // waits for the process's other nodes of the role to finalize, and takes
  // along those that nobody will (see others_to_leave_with).
  void finalize(bool do_barrier, bool with_idle_siblings);
  void barrier(int group);

  // ps::Van
  int Send(const ps::Message& msg) override;
  const ps::Node& my_node() const override;
  void RegisterRecvBuffer(ps::Message& msg) override;

  void add_customer(ps::Customer* c);
  void remove_customer(ps::Customer* c);
  ps::Customer* customer(int app_id, int customer_id) const;
  bool has_customers() const;

  const std::vector<int>& node_ids(int id_or_group) const;
  const std::vector<ps::Range>& key_ranges();
  void set_exit_callback(std::function<void()> cb);

  ps::Postoffice* postoffice() { return &postoffice_; }
  Role role() const;
  int index() const { return index_; }
  int instance() const { return instance_; }
  int group_size() const { return group_size_; }
  int my_rank() const;
  int preferred_rank() const;
  int num_workers() const;  // DMLC_NUM_WORKER: groups, not nodes
  int num_servers() const;
  int op_timeout_s() const;
  // Started and not yet finalizing.
  bool running() const;
  // Empty while the job is healthy.
  std::string failure() const;
  // Wakes every waiting customer (on job failure).
  void notify_customers();

 private:
  void route(KVMessage&& m);
  void fail(const std::string& why);
  void require_started(const char* what) const;
  void leave(int timeout, std::string* error);
  // Ends the process when messages for `key` find no customer within
  // kUnclaimedSeconds, or half CARAVAN_OP_TIMEOUT when shorter (a program
  // that never made its application object), saying unclaimed().
  std::string unclaimed(const std::pair<int, int>& key, int sender) const;
  void watch_unclaimed(std::pair<int, int> key, int sender);
  static constexpr int kUnclaimedSeconds = 60;

  ps::Postoffice postoffice_{this};
  const int index_;
  const int instance_;
  const int group_size_;
  const bool role_from_env_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Role role_;
  int stage_ = 0;  // 0 not started, 1 starting, 2 running, 3 finalizing, 4 finished
  int preferred_rank_ = -1;
  JobConfig config_;
  std::unique_ptr<Node> node_;                   // server or worker
  std::unique_ptr<caravan::Van> scheduler_van_;  // scheduler
  std::unique_ptr<SchedulerService> service_;    // scheduler
  std::unique_ptr<KVEndpoint> scheduler_kv_;     // scheduler
  KVEndpoint* kv_ = nullptr;
  ps::Node my_node_;
  std::map<int, std::vector<int>> ids_;
  std::vector<ps::Range> ranges_;
  // Calls of Send using the endpoint after letting go of mu_: finalize
  // frees the endpoint only once there are none.
  int sends_in_progress_ = 0;
  std::function<void()> exit_cb_;
  std::string failure_;
  // A barrier this node is in, by group, shared by its threads (under mu_).
  struct BarrierRound {
    bool done = false;
    std::string error;
  };
  std::map<int, std::shared_ptr<BarrierRound>> barriers_;

  Customers customers_;
  // BYTEPS_ENABLE_IPC: a worker's lanes to the servers of its host, a
  // server's view of those workers' memory. Set before the node runs;
  // kept until the process ends (an application may still hold a view).
  std::unique_ptr<ShmSender> shm_out_;
  std::unique_ptr<ShmReceiver> shm_in_;
  // Puts the values of `out` in shared memory when it can (a slot
  // descriptor and kShm in their place); otherwise leaves `out` as it is.
  void send_through_shm(const ps::Message& msg, KVMessage& out);
  // A push from a sender and key with a RegisterRecvBuffer buffer: its
  // values copied there, and msg's values that buffer.
  void receive_into_registered(ps::Message& msg);
  // A kShm message's values (or a pull answer's keys and values).
  void receive_through_shm(const KVMessage& km, ps::Message& msg);
  // A server's answer to an attach request (kShm, not routed).
  void attach(KVMessage&& req);
};

}  // namespace caravan::psl
