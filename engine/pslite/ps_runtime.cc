#include "engine/pslite/ps_runtime.h"

#include <unistd.h>

#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/net.h"
#include "ps/base.h"
#include "ps/internal/logging.h"

namespace caravan::psl {
namespace {

// A received segment as a SArray<char> that keeps the van's memory alive;
// copied only when misaligned for 8-byte keys and values.
ps::SArray<char> view(const Blob& b) {
  ps::SArray<char> out;
  if (b.len == 0) return out;
  if (reinterpret_cast<uintptr_t>(b.data) % alignof(uint64_t) != 0) {
    out.CopyFrom(static_cast<const char*>(b.data), b.len);
    return out;
  }
  auto keep = b.keep;
  out.reset(static_cast<char*>(b.data), b.len, [keep](char*) {});
  return out;
}

Blob blob_of(const ps::SArray<char>& a) {
  return Blob{a.data(), a.size(), std::shared_ptr<const void>(a.ptr(), a.data())};
}

ps::Error ps_error(const std::string& what) {
  caravan::Log::write(CARAVAN_LOG_ERROR, what);
  return ps::Error(what);
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime* r = new Runtime();  // never destroyed: customers may outlive main()
  return *r;
}

void Runtime::require_started(const char* what) const {
  if (stage_ < 2) throw ps_error(std::string(what) + " before ps::Start()");
}

Role Runtime::role() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Postoffice role query");
  return config_.role;
}
int Runtime::my_rank() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::MyRank()");
  return my_rank_;
}
int Runtime::num_workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::NumWorkers()");
  return config_.num_workers;
}
int Runtime::num_servers() const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::NumServers()");
  return config_.num_servers;
}
int Runtime::op_timeout_s() const {
  std::lock_guard<std::mutex> lock(mu_);
  return config_.op_timeout_s;
}
std::string Runtime::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void Runtime::fail(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) return;
    failure_ = why;
  }
  notify_customers();
}

void Runtime::notify_customers() {
  std::lock_guard<std::mutex> lock(customers_mu_);
  // Adding no response to no request only wakes the waiters, which then
  // see failure().
  for (auto& [k, c] : customers_) c->AddResponse(-1, 0);
}

void Runtime::start(int customer_id, bool do_barrier) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stage_ == 1) cv_.wait(lock, [&] { return stage_ != 1; });
  if (stage_ == 0) {
    stage_ = 1;
    lock.unlock();
    try {
      Log::configure_from_env();
      JobConfig cfg = JobConfig::from_env();
      std::vector<NodeInfo> table;
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
          for (const NodeInfo& n : table) ids.push_back(n.id);
          kv->set_seal(std::make_unique<MessageSeal>(*cfg.job_token, service->job_nonce(),
                                                     kSchedulerId, ids));
        }
        for (auto& n : table)
          if (n.id != kSchedulerId) van->connect(static_cast<uint64_t>(n.id), n.van_address);
        kv->start();
        lock.lock();
        scheduler_van_ = std::move(van);
        service_ = std::move(service);
        scheduler_kv_ = std::move(kv);
        kv_ = scheduler_kv_.get();
        my_id_ = kSchedulerId;
        my_rank_ = 0;
      } else {
        NodeOptions options;
        options.full_mesh = true;
        options.on_request = [](KVMessage&& m) {
          CARAVAN_LOG(WARNING) << "ps: dropping a push_pull request from node " << m.head.sender;
        };
        options.on_routed = [this](KVMessage&& m) { route(std::move(m)); };
        options.on_failure = [this](const std::string& why) { fail(why); };
        auto node = std::make_unique<Node>(cfg, std::move(options));
        table = node->table();
        lock.lock();
        my_id_ = node->self().id;
        my_rank_ = node->self().rank;
        kv_ = &node->kv();
        node_ = std::move(node);
      }
      config_ = cfg;
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
  (void)customer_id;
}

void Runtime::barrier(int group) {
  std::unique_lock<std::mutex> lock(mu_);
  require_started("ps::Postoffice::Barrier()");
  if (ids_[group].size() <= 1) return;
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
    throw ps_error(std::string("ps barrier failed: ") + e.what());
  }
}

void Runtime::finalize(int customer_id, bool do_barrier) {
  if (customer_id != 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stage_ != 2) return;
  }
  std::string error;
  try {
    if (do_barrier) barrier(ps::kScheduler + ps::kServerGroup + ps::kWorkerGroup);
  } catch (const ps::Error& e) {
    error = e.what();
  }
  std::unique_lock<std::mutex> lock(mu_);
  int timeout = config_.op_timeout_s;
  if (service_) {
    auto* service = service_.get();
    lock.unlock();
    try {
      if (error.empty()) service->barrier(0, true, timeout);
    } catch (const Error& e) {
      error = e.what();
    }
    scheduler_kv_->stop();
    int rc = service->finish();
    if (rc != 0 && error.empty()) error = service->failure();
    lock.lock();
  } else if (node_) {
    auto* node = node_.get();
    lock.unlock();
    try {
      if (error.empty()) node->leave(timeout);
    } catch (const Error& e) {
      error = e.what();
    }
    lock.lock();
  }
  stage_ = 3;
  kv_ = nullptr;
  auto cb = exit_cb_;
  lock.unlock();
  // Exit callbacks delete the applications, so their customers go before
  // the transport they might still hold.
  if (cb) cb();
  lock.lock();
  cv_.wait(lock, [&] { return sends_in_progress_ == 0; });
  scheduler_kv_.reset();
  service_.reset();
  scheduler_van_.reset();
  node_.reset();
  lock.unlock();
  if (!error.empty()) throw ps_error("ps::Finalize: " + error);
}

int Runtime::Send(const ps::Message& msg) {
  KVEndpoint* kv;
  int self;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw ps_error("ps: the job failed: " + failure_);
    if (!kv_) throw ps_error("ps: Send before ps::Start() or after ps::Finalize()");
    kv = kv_;
    self = my_id_;
    ++sends_in_progress_;
  }
  struct SendInProgress {
    Runtime& rt;
    ~SendInProgress() {
      std::lock_guard<std::mutex> lock(rt.mu_);
      if (--rt.sends_in_progress_ == 0) rt.cv_.notify_all();
    }
  } in_progress{*this};
  const ps::Meta& m = msg.meta;
  KVMessage out;
  out.head.cmd = m.head;
  out.head.app_id = m.app_id;
  out.head.customer_id = m.customer_id;
  out.head.timestamp = m.timestamp;
  out.head.priority = m.priority;
  out.head.flags = (m.request ? wire::kRequest : 0u) | (m.push ? wire::kPush : 0u) |
                   (m.pull ? wire::kPull : 0u) | (m.simple_app ? wire::kSimple : 0u);
  if (m.simple_app) {
    auto body = std::make_shared<std::string>(m.body);
    out.vals = Blob{body->data(), body->size(), body};
  } else {
    Blob* slots[3] = {&out.keys, &out.vals, &out.lens};
    for (size_t i = 0; i < msg.data.size() && i < 3; ++i) *slots[i] = blob_of(msg.data[i]);
  }
  int bytes = static_cast<int>(out.keys.len + out.vals.len + out.lens.len);
  if (m.recver == self) {
    // A group may include this node: deliver without the van, which has no
    // path to itself.
    out.head.type = wire::Type::kKV;
    out.head.flags |= wire::kRouted;
    out.head.sender = self;
    out.head.recipient = self;
    out.peer = "this process";
    route(std::move(out));
    return bytes;
  }
  try {
    kv->send_routed(m.recver, std::move(out), nullptr);
  } catch (const Error& e) {
    throw ps_error(std::string("ps: sending to node ") + std::to_string(m.recver) + " failed: " +
                   e.what());
  }
  return bytes;
}

void Runtime::route(KVMessage&& km) {
  ps::Message msg;
  const wire::Header& h = km.head;
  msg.meta.head = h.cmd;
  msg.meta.app_id = h.app_id;
  msg.meta.customer_id = h.customer_id;
  msg.meta.timestamp = h.timestamp;
  msg.meta.sender = h.sender;
  msg.meta.recver = h.recipient;
  msg.meta.priority = h.priority;
  msg.meta.request = h.flags & wire::kRequest;
  msg.meta.push = h.flags & wire::kPush;
  msg.meta.pull = h.flags & wire::kPull;
  msg.meta.simple_app = h.flags & wire::kSimple;
  if (msg.meta.simple_app) {
    msg.meta.body.assign(static_cast<const char*>(km.vals.data), km.vals.len);
  } else if (km.keys.len) {
    msg.data.push_back(view(km.keys));
    msg.data.push_back(view(km.vals));
    if (km.lens.len) msg.data.push_back(view(km.lens));
  }
  bool worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker = config_.role == Role::kWorker;
  }
  // As in ps-lite: a worker routes by the message's customer; servers and
  // the scheduler run one customer per app, whose id is the app id.
  auto key = std::make_pair(h.app_id, worker ? h.customer_id : h.app_id);
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto it = customers_.find(key);
  if (it == customers_.end()) {
    early_[key].push_back(std::move(msg));
    return;
  }
  it->second->Accept(msg);
}

void Runtime::add_customer(ps::Customer* c) {
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto key = std::make_pair(c->app_id(), c->customer_id());
  if (customers_.count(key))
    throw ps_error("ps: customer (app " + std::to_string(key.first) + ", customer " +
                   std::to_string(key.second) + ") already exists in this process");
  customers_[key] = c;
  auto it = early_.find(key);
  if (it == early_.end()) return;
  for (auto& m : it->second) c->Accept(m);
  early_.erase(it);
}

void Runtime::remove_customer(ps::Customer* c) {
  std::lock_guard<std::mutex> lock(customers_mu_);
  customers_.erase(std::make_pair(c->app_id(), c->customer_id()));
}

ps::Customer* Runtime::customer(int app_id, int customer_id) const {
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto it = customers_.find(std::make_pair(app_id, customer_id));
  return it == customers_.end() ? nullptr : it->second;
}

const std::vector<int>& Runtime::node_ids(int id_or_group) const {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Postoffice::GetNodeIDs()");
  auto it = ids_.find(id_or_group);
  if (it == ids_.end()) throw ps_error("ps: no node or group " + std::to_string(id_or_group));
  return it->second;
}

const std::vector<ps::Range>& Runtime::key_ranges() {
  std::lock_guard<std::mutex> lock(mu_);
  require_started("ps::Postoffice::GetServerKeyRanges()");
  if (ranges_.empty()) {
    uint64_t m = static_cast<uint64_t>(config_.num_servers);
    for (uint64_t i = 0; i < m; ++i)
      ranges_.push_back(ps::Range(ps::kMaxKey / m * i, ps::kMaxKey / m * (i + 1)));
  }
  return ranges_;
}

void Runtime::set_exit_callback(std::function<void()> cb) {
  std::lock_guard<std::mutex> lock(mu_);
  exit_cb_ = std::move(cb);
}

}  // namespace caravan::psl
