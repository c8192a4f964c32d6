#include "engine/pslite/ps_member.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/net.h"
#include "engine/ipc/messages.h"
#include "engine/pslite/ps_convert.h"
#include "engine/pslite/ps_runtime.h"
#include "ps/base.h"
#include "ps/internal/logging.h"

namespace caravan::psl {

Member::Member(Role role, int index, int instance, int group_size, bool role_from_env)
    : index_(index),
      instance_(instance),
      group_size_(group_size),
      role_from_env_(role_from_env),
      role_(role) {}

void Member::require_started(const char* what) const {
  if (stage_ < 2) throw ps_error(std::string(what) + " before ps::Start()");
}

Role Member::role() const {
  std::lock_guard<std::mutex> lock(mu_);
  return role_;
}
int Member::my_rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::MyRank()");
  return ps::Postoffice::IDtoRank(my_node_.id);
}
int Member::preferred_rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  return preferred_rank_;
}
int Member::num_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::NumWorkers()");
  return config_.num_workers / group_size_;
}
int Member::num_servers() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::NumServers()");
  return config_.num_servers / group_size_;
}
int Member::op_timeout_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_.op_timeout_s;
}
bool Member::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stage_ == 2;
}
std::string Member::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}
const ps::Node& Member::my_node() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Van::my_node()");
  return my_node_;
}

void Member::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) return;
    failure_ = why;
  }
  notify_customers();
}

void Member::notify_customers() { customers_.wake_all(); }

void Member::start(int rank, bool do_barrier) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stage_ == 1) cv_.wait(lock, [&] { return stage_ != 1; });
  if (stage_ == 0) {
    stage_ = 1;
    preferred_rank_ = rank;
    lock.unlock();
    try {
      Log::configure_from_env();
      JobConfig cfg = role_from_env_ ? JobConfig::from_env() : JobConfig::from_env(role_);
      // Every node of a group counts: the scheduler waits for them all.
      cfg.num_workers *= group_size_;
      cfg.num_servers *= group_size_;
      int nodes_of_role = cfg.role == Role::kServer ? cfg.num_servers : cfg.num_workers;
      if (rank >= 0) {
        if (cfg.role != Role::kScheduler && rank >= nodes_of_role)
          throw Error(CARAVAN_ERR_CONFIG, "ps::StartPS: rank " + std::to_string(rank) +
                                              " asked for a " + role_name(cfg.role) +
                                              " but the job has " + std::to_string(nodes_of_role) +
                                              " (DMLC_NUM_WORKER/DMLC_NUM_SERVER " +
                                              "times DMLC_GROUP_SIZE)");
        cfg.preferred_rank = rank;
      } else if (index_ > 0) {
        // DMLC_WORKER_ID names the process's first node, not every one.
        cfg.preferred_rank.reset();
      }
      std::vector<NodeInfo> table;
      ps::Node me;
      me.role = ps_role(cfg.role);
      me.customer_id = index_;
      if (cfg.role == Role::kScheduler) {
        auto van = open_van(cfg);
        NodeInfo self;
        self.host = net::advertised_host(cfg.node_host, cfg.interface);
        self.pid = static_cast<int>(getpid());
        self.van_address = van->listen(self.host, 0);
        auto service = std::make_unique<SchedulerService>(cfg, &self);
        service->set_failure_handler([this](const std::string& why) { fail(why); });
        service->start();
        table = service->wait_table();
        auto kv = std::make_unique<KVEndpoint>(*van, kSchedulerId, [](KVMessage&&) {});
        kv->set_routed_handler([this](KVMessage&& m) { route(std::move(m)); });
        kv->set_reliability(cfg.resend_timeout_ms, cfg.drop_percent);
        if (cfg.job_token) {
          std::vector<int32_t> ids;
          ids.reserve(table.size());
          for (const NodeInfo& n : table) ids.push_back(n.id);
          kv->set_seal(std::make_unique<MessageSeal>(*cfg.job_token, service->job_nonce(),
                                                     kSchedulerId, ids));
        }
        for (auto& n : table)
          if (n.id != kSchedulerId) van->connect(static_cast<uint64_t>(n.id), n.van_address);
        kv->start();
        me.id = kSchedulerId;
        me.hostname = self.host;
        me.port = cfg.root_port;
        lock.lock();
        scheduler_van_ = std::move(van);
        service_ = std::move(service);
        scheduler_kv_ = std::move(kv);
        kv_ = scheduler_kv_.get();
      } else {
        NodeOptions options;
        options.full_mesh = true;
        options.on_request = [this](KVMessage&& m) {
          if ((m.head.flags & wire::kShm) && !(m.head.flags & (wire::kPush | wire::kPull)))
            return attach(std::move(m));
          CARAVAN_LOG(WARNING) << "ps: dropping a push_pull request from node " << m.head.sender;
        };
        options.on_routed = [this](KVMessage&& m) { route(std::move(m)); };
        options.on_failure = [this](int, const std::string& why) { fail(why); };
        if (cfg.enable_ipc && cfg.role == Role::kServer)
          shm_in_ = std::make_unique<ShmReceiver>(cfg.num_workers);
        auto node = std::make_unique<Node>(cfg, std::move(options));
        table = node->table();
        me.id = node->self().id;
        me.hostname = node->self().host;
        if (cfg.enable_ipc && cfg.role == Role::kWorker)
          shm_out_ = std::make_unique<ShmSender>(node->kv(), cfg, node->self(), table);
        lock.lock();
        kv_ = &node->kv();
        node_ = std::move(node);
      }
      config_ = cfg;
      role_ = cfg.role;
      my_node_ = me;
      for (int g = 1; g <= 7; ++g) {
        auto& v = ids_[g];
        for (auto& n : table) {
          int bit = n.role == Role::kScheduler ? ps::kScheduler
                    : n.role == Role::kServer  ? ps::kServerGroup
                                               : ps::kWorkerGroup;
          if (g & bit) v.push_back(n.id);
        }
      }
      for (auto& n : table) ids_[n.id] = {n.id};
      ids_[kSchedulerId] = {kSchedulerId};
      stage_ = 2;
      cv_.notify_all();
    } catch (const Error& e) {
      if (!lock.owns_lock()) lock.lock();
      stage_ = 0;
      cv_.notify_all();
      throw ps_error(std::string("ps::Start failed: ") + e.what());
    }
  }
  if (stage_ != 2) throw ps_error("ps::Start after ps::Finalize");
  lock.unlock();
  if (do_barrier) barrier(ps::kScheduler + ps::kServerGroup + ps::kWorkerGroup);
}

void Member::barrier(int group) {
  std::unique_lock<std::mutex> lock(mu_);
  require_started("ps::Postoffice::Barrier()");
  if (ids_[group].size() <= 1) return;
  // Threads of this node that call it at once share one round: a second
  // request from the node could reach the scheduler after the round ended
  // and open the next one in the node's name.
  auto& slot = barriers_[group];
  if (slot) {
    std::shared_ptr<BarrierRound> round = slot;
    cv_.wait(lock, [&] { return round->done; });
    if (!round->error.empty()) throw ps_error(round->error);
    return;
  }
  auto round = std::make_shared<BarrierRound>();
  slot = round;
  int timeout = config_.op_timeout_s;
  SchedulerService* service = service_.get();
  Node* node = node_.get();
  lock.unlock();
  try {
    if (service)
      service->barrier(group, false, timeout);
    else
      node->barrier(group, timeout);
  } catch (const Error& e) {
    round->error = std::string("ps barrier failed: ") + e.what();
  }
  lock.lock();
  round->done = true;
  barriers_.erase(group);
  cv_.notify_all();
  if (!round->error.empty()) throw ps_error(round->error);
}

void Member::leave(int timeout, std::string* error) {
  std::unique_lock<std::mutex> lock(mu_);
  if (service_) {
    auto* service = service_.get();
    lock.unlock();
    try {
      if (error->empty()) service->barrier(0, true, timeout);
    } catch (const Error& e) {
      *error = e.what();
    }
    scheduler_kv_->stop();
    int rc = service->finish();
    if (rc != 0 && error->empty()) *error = service->failure();
  } else if (node_) {
    auto* node = node_.get();
    lock.unlock();
    try {
      if (error->empty()) node->leave(timeout);
    } catch (const Error& e) {
      *error = e.what();
    }
  }
}

void Member::finalize(bool do_barrier, bool with_idle_siblings) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stage_ != 2) return;
    stage_ = 3;
  }
  Runtime::get().node_changed();
  std::string error;
  try {
    if (do_barrier) barrier(ps::kScheduler + ps::kServerGroup + ps::kWorkerGroup);
  } catch (const ps::Error& e) {
    error = e.what();
  }
  int timeout = op_timeout_s();
  std::vector<Member*> alongside;
  if (with_idle_siblings && error.empty()) {
    try {
      alongside = others_to_leave_with(*this, timeout);
    } catch (const ps::Error& e) {
      error = e.what();
    }
  }
  // The shutdown barrier counts every node, so nodes of this process that
  // leave with this one must enter it at the same time.
  std::vector<std::thread> others;
  std::vector<std::string> other_errors(alongside.size());
  for (size_t i = 0; i < alongside.size(); ++i)
    others.emplace_back([&, i] {
      try {
        alongside[i]->finalize(false, false);
      } catch (const ps::Error& e) {
        other_errors[i] = e.what();
      }
    });
  leave(timeout, &error);
  for (auto& t : others) t.join();
  for (auto& e : other_errors)
    if (error.empty() && !e.empty()) error = e;
  std::unique_lock<std::mutex> lock(mu_);
  stage_ = 4;
  kv_ = nullptr;
  auto cb = exit_cb_;
  lock.unlock();
  // Exit callbacks delete the applications, so their customers go before
  // the transport they might still hold.
  if (cb) cb();
  lock.lock();
  cv_.wait(lock, [&] { return sends_in_progress_ == 0; });
  // Destroyed without mu_: stopping them joins their threads, which may be
  // in fail() waiting for mu_.
  auto scheduler_kv = std::move(scheduler_kv_);
  auto service = std::move(service_);
  auto scheduler_van = std::move(scheduler_van_);
  auto node = std::move(node_);
  lock.unlock();
  scheduler_kv.reset();
  service.reset();
  scheduler_van.reset();
  node.reset();
  if (!error.empty()) throw ps_error("ps::Finalize: " + error);
}

void Member::add_customer(ps::Customer* c) { customers_.add(c); }

void Member::remove_customer(ps::Customer* c) {
  customers_.remove(c);
  Runtime::get().node_changed();
}

ps::Customer* Member::customer(int app_id, int customer_id) const {
  return customers_.find(app_id, customer_id);
}

bool Member::has_customers() const { return !customers_.empty(); }

const std::vector<int>& Member::node_ids(int id_or_group) const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Postoffice::GetNodeIDs()");
  auto it = ids_.find(id_or_group);
  if (it == ids_.end()) throw ps_error("ps: no node or group " + std::to_string(id_or_group));
  return it->second;
}

const std::vector<ps::Range>& Member::key_ranges() {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Postoffice::GetServerKeyRanges()");
  if (ranges_.empty()) {
    // Over DMLC_NUM_SERVER, as bytedance/ps-lite splits it: a worker
    // instance sends range r to instance `instance_` of server group r.
    uint64_t m = static_cast<uint64_t>(config_.num_servers / group_size_);
    for (uint64_t i = 0; i < m; ++i)
      ranges_.push_back(ps::Range(ps::kMaxKey / m * i, ps::kMaxKey / m * (i + 1)));
  }
  return ranges_;
}

void Member::set_exit_callback(std::function<void()> cb) {
  std::lock_guard<std::mutex> lock(mu_);
  exit_cb_ = std::move(cb);
}

}  // namespace caravan::psl
