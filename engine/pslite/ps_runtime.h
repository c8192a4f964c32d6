// The ps-lite nodes of this process (engine/pslite/ps_member.h), by role
// and index: made by Postoffice::Init (bytedance/ps-lite's instances and
// JOINT roles), by a worker's Start(customer_id), or on first use from
// DMLC_ROLE. Members live as long as the process: Postoffice pointers to
// them stay valid after Finalize.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/pslite/ps_member.h"
#include "ps/internal/message.h"

namespace caravan::psl {

class Runtime {
 public:
  static Runtime& get();

  // Makes the nodes of `role` (DMLC_GROUP_SIZE of each); once per process.
  void init(ps::Node::Role role);
  // The scheduler, else server 0, else worker 0; made from DMLC_ROLE when
  // there is none yet.
  Member& first();
  // Node `index` of `role`, or nullptr.
  Member* find(Role role, int index);
  // The node of a worker's Start(customer_id): made on first use.
  Member& worker_for_customer(int customer_id);
  // Every node of this process of `role`, by index.
  std::vector<Member*> members_of(Role role);
  // DMLC_GROUP_SIZE, checked; 1 when unset.
  static int group_size_from_env();

  // A node started finalizing or lost a customer: wakes waits on others.
  void node_changed();
  // Waits until `done` holds, at most until `deadline`; false on timeout.
  bool wait_nodes(const std::function<bool()>& done,
                  std::chrono::steady_clock::time_point deadline);

 private:
  Runtime() = default;
  Member& make(Role role, int index, int instance, int group_size, bool role_from_env);

  std::mutex mu_;
  std::mutex changed_mu_;
  std::condition_variable changed_;
  bool initialized_ = false;
  std::map<std::pair<Role, int>, std::unique_ptr<Member>> members_;
  Member* first_ = nullptr;
};

// The waits of node 0's Finalize for the process's other nodes of its
// role: returns those nobody will finalize (no customers left, never
// finalized) so that they leave alongside it. Throws ps::Error when one is
// still in use after `timeout_s`.
std::vector<Member*> others_to_leave_with(Member& m, int timeout_s);

}  // namespace caravan::psl
