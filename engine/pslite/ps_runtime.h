// The engine side of the ps-lite API: one process-wide runtime that joins
// the job in any role, routes messages to Customers by (app_id,
// customer_id), and converts between ps::Message and the engine's
// KVMessage without copying values.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/control/scheduler_service.h"
#include "engine/node/node.h"
#include "ps/internal/customer.h"
#include "ps/internal/van.h"
#include "ps/range.h"

namespace caravan::psl {

class Runtime final : public ps::Van {
 public:
  static Runtime& get();

  void start(int customer_id, bool do_barrier);
  void finalize(int customer_id, bool do_barrier);
  void barrier(int group);

  // ps::Van
  int Send(const ps::Message& msg) override;

  void add_customer(ps::Customer* c);
  void remove_customer(ps::Customer* c);
  ps::Customer* customer(int app_id, int customer_id) const;

  const std::vector<int>& node_ids(int id_or_group) const;
  const std::vector<ps::Range>& key_ranges();
  void set_exit_callback(std::function<void()> cb);

  Role role() const;
  int my_rank() const;
  int num_workers() const;
  int num_servers() const;
  int op_timeout_s() const;
  // Empty while the job is healthy.
  std::string failure() const;
  // Wakes every waiting customer (on job failure).
  void notify_customers();

 private:
  Runtime() = default;
  void route(KVMessage&& m);
  void fail(const std::string& why);
  void require_started(const char* what) const;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int stage_ = 0;  // 0 not started, 1 starting, 2 running, 3 finished
  JobConfig config_;
  std::unique_ptr<Node> node_;                 // server or worker
  std::unique_ptr<caravan::Van> scheduler_van_;  // scheduler
  std::unique_ptr<SchedulerService> service_;  // scheduler
  std::unique_ptr<KVEndpoint> scheduler_kv_;   // scheduler
  KVEndpoint* kv_ = nullptr;
  int my_id_ = 0;
  int my_rank_ = 0;
  std::map<int, std::vector<int>> ids_;
  std::vector<ps::Range> ranges_;
  // Calls of Send using the endpoint after letting go of mu_: finalize
  // frees the endpoint only once there are none.
  int sends_in_progress_ = 0;
  // Guards customers_ and early_, and is held while a message is handed to
  // a customer: ~Customer removes itself under it, so it is never freed in
  // the middle of Accept. Taken before a customer's own lock, never after.
  mutable std::mutex customers_mu_;
  std::map<std::pair<int, int>, ps::Customer*> customers_;
  std::map<std::pair<int, int>, std::vector<ps::Message>> early_;
  std::function<void()> exit_cb_;
  std::string failure_;
};

}  // namespace caravan::psl
