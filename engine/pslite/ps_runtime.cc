#include "engine/pslite/ps_runtime.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "ps/internal/logging.h"

namespace caravan::psl {

Runtime& Runtime::get() {
  static Runtime* r = new Runtime();  // never destroyed: customers may outlive main()
  return *r;
}

int Runtime::group_size_from_env() {
  auto v = env::get("DMLC_GROUP_SIZE");
  if (!v) return 1;
  try {
    return static_cast<int>(env::parse_integer("DMLC_GROUP_SIZE", *v, 1, 1024));
  } catch (const Error& e) {
    throw ps::Error(e.what());
  }
}

Member& Runtime::make(Role role, int index, int instance, int group_size, bool role_from_env) {
  auto& slot = members_[std::make_pair(role, index)];
  if (!slot) slot = std::make_unique<Member>(role, index, instance, group_size, role_from_env);
  return *slot;
}

void Runtime::init(ps::Node::Role role) {
  int g = group_size_from_env();
  std::lock_guard<std::mutex> lock(mu_);
  if (initialized_) return;
  if (role == ps::Node::SCHEDULER) {
    first_ = &make(Role::kScheduler, 0, 0, g, false);
  } else {
    if (role == ps::Node::SERVER || role == ps::Node::JOINT)
      for (int i = 0; i < g; ++i) make(Role::kServer, i, i, g, false);
    if (role == ps::Node::WORKER || role == ps::Node::JOINT)
      for (int i = 0; i < g; ++i) make(Role::kWorker, i, i, g, false);
    first_ = role == ps::Node::WORKER ? members_[{Role::kWorker, 0}].get()
                                      : members_[{Role::kServer, 0}].get();
  }
  initialized_ = true;
}

Member& Runtime::first() {
  std::lock_guard<std::mutex> lock(mu_);
  if (first_) return *first_;
  // dmlc/ps-lite: one node of DMLC_ROLE's role. A missing or bad DMLC_ROLE
  // is refused by name when the node starts.
  const char* r = std::getenv("DMLC_ROLE");
  std::string role = r ? r : "";
  if (role == "scheduler") {
    first_ = &make(Role::kScheduler, 0, 0, 1, true);
  } else if (role == "server") {
    first_ = &make(Role::kServer, 0, 0, 1, true);
  } else {
    first_ = &make(Role::kWorker, 0, 0, 1, true);
  }
  initialized_ = true;
  return *first_;
}

Member* Runtime::find(Role role, int index) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(std::make_pair(role, index));
  return it == members_.end() ? nullptr : it->second.get();
}

Member& Runtime::worker_for_customer(int customer_id) {
  std::lock_guard<std::mutex> lock(mu_);
  // A node of its own in a group of one, its role DMLC_ROLE's like the first.
  return make(Role::kWorker, customer_id, 0, 1, true);
}

std::vector<Member*> Runtime::members_of(Role role) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Member*> out;
  for (auto& [k, m] : members_)
    if (k.first == role) out.push_back(m.get());
  return out;
}

void Runtime::node_changed() {
  std::lock_guard<std::mutex> lock(changed_mu_);
  changed_.notify_all();
}

bool Runtime::wait_nodes(const std::function<bool()>& done,
                         std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(changed_mu_);
  return changed_.wait_until(lock, deadline, done);
}

std::vector<Member*> others_to_leave_with(Member& m, int timeout_s) {
  std::vector<Member*> out;
  if (m.index() != 0) return out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (Member* o : Runtime::get().members_of(m.role())) {
    if (o == &m) continue;
    // A node still running with customers belongs to a thread that has not
    // called Finalize yet: leaving now would strand it.
    bool settled = Runtime::get().wait_nodes(
        [&] { return !o->running() || !o->has_customers() || !m.failure().empty(); }, deadline);
    {
      if (!settled) {
        std::string what = "ps::Finalize(0): the " + std::string(role_name(m.role())) +
                           " node of customer " + std::to_string(o->index()) +
                           " of this process is still in use after " + std::to_string(timeout_s) +
                           " s (CARAVAN_OP_TIMEOUT); call Finalize(" + std::to_string(o->index()) +
                           ") on its thread";
        Log::write(CARAVAN_LOG_ERROR, what);
        throw ps::Error(what);
      }
    }
    if (o->running()) out.push_back(o);
  }
  return out;
}

}  // namespace caravan::psl
