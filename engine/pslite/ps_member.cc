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
#include "engine/pslite/ps_runtime.h"
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

ps::Node::Role ps_role(Role r) {
  return r == Role::kScheduler ? ps::Node::SCHEDULER
         : r == Role::kServer  ? ps::Node::SERVER
                               : ps::Node::WORKER;
}

}  // namespace

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

void Member::notify_customers() {
  std::lock_guard<std::mutex> lock(customers_mu_);
  // Adding no response to no request only wakes the waiters, which then
  // see failure().
  for (auto& [k, c] : customers_) c->AddResponse(-1, 0);
}

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
          throw Error(CARAVAN_ERR_CONFIG,
                      "ps::StartPS: rank " + std::to_string(rank) + " asked for a " +
                          role_name(cfg.role) + " but the job has " +
                          std::to_string(nodes_of_role) + " (DMLC_NUM_WORKER/DMLC_NUM_SERVER " +
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
        options.on_failure = [this](const std::string& why) { fail(why); };
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

int Member::Send(const ps::Message& msg) {
  const ps::Meta& m = msg.meta;
  if (msg.data.size() > 1 && (m.src_dev_type == ps::GPU || m.dst_dev_type == ps::GPU))
    throw ps_error("ps: values of key " + std::to_string(m.key) + " are in GPU memory (" +
                   (m.src_dev_type == ps::GPU ? "src GPU " + std::to_string(m.src_dev_id)
                                              : "dst GPU " + std::to_string(m.dst_dev_id)) +
                   "); Caravan's ps-lite layer moves host memory only: copy them to the host "
                   "first, or use byteps.torch, whose push_pull takes CUDA tensors");
  KVEndpoint* kv;
  int self;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw ps_error("ps: the job failed: " + failure_);
    if (!kv_) throw ps_error("ps: Send before ps::Start() or after ps::Finalize()");
    kv = kv_;
    self = my_node_.id;
    ++sends_in_progress_;
  }
  struct SendInProgress {
    Member& member;
    ~SendInProgress() {
      std::lock_guard<std::mutex> lock(member.mu_);
      if (--member.sends_in_progress_ == 0) member.cv_.notify_all();
    }
  } in_progress{*this};
  KVMessage out;
  out.head.cmd = m.head;
  out.head.app_id = m.app_id;
  out.head.customer_id = m.customer_id;
  out.head.timestamp = m.timestamp;
  out.head.priority = m.priority;
  out.head.flags = (m.request ? wire::kRequest : 0u) | (m.push ? wire::kPush : 0u) |
                   (m.pull ? wire::kPull : 0u) | (m.simple_app ? wire::kSimple : 0u);
  // A routed message carries no engine status: the field holds ps-lite's
  // val_len, which a pull request needs since it carries no values.
  out.head.status = m.val_len;
  if (m.dst_dev_type == ps::CPU) {
    out.head.device_type = static_cast<uint8_t>(ps::CPU);
    out.head.device_id = static_cast<int16_t>(m.dst_dev_id);
  }
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
  if (shm_out_ || shm_in_) send_through_shm(msg, out);
  try {
    kv->send_routed(m.recver, std::move(out), nullptr);
  } catch (const Error& e) {
    throw ps_error(std::string("ps: sending to node ") + std::to_string(m.recver) + " failed: " +
                   e.what());
  }
  return bytes;
}

void Member::send_through_shm(const ps::Message& msg, KVMessage& out) {
  const ps::Meta& m = msg.meta;
  std::optional<std::vector<uint8_t>> descriptor;
  if (shm_in_ && !m.request && m.pull && !m.simple_app) {
    // A server's answer to a pull that came through shared memory goes
    // into its slot; one without values still settles it.
    const bool has_vals = msg.data.size() >= 2;
    descriptor = shm_in_->answer(m.recver, m.customer_id, m.timestamp,
                                 has_vals ? msg.data[1].data() : nullptr,
                                 has_vals ? msg.data[1].size() : 0);
  } else if (shm_out_ && m.request && !m.simple_app && !(m.push && m.pull) &&
             msg.data.size() >= 2 && msg.data[0].size() == sizeof(ps::Key)) {
    // One key a request, and not both ways at once: bytedance/ps-lite's
    // IPC requests.
    uint64_t key;
    std::memcpy(&key, msg.data[0].data(), sizeof key);
    size_t bytes = m.push ? msg.data[1].size() : m.pull_bytes;
    if (auto slot = shm_out_->take(m.recver, m.customer_id, m.timestamp, key, m.pull,
                                   msg.data[1].data(), bytes, msg.data[0]))
      descriptor = ipc::encode_descriptor(slot->where);
  }
  if (!descriptor) return;
  auto body = std::make_shared<std::vector<uint8_t>>(std::move(*descriptor));
  out.vals = Blob{body->data(), body->size(), body};
  out.head.flags |= wire::kShm;
}

void Member::attach(KVMessage&& req) {
  KVEndpoint* kv;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kv = kv_;
  }
  if (!kv) return;
  std::string why = "BYTEPS_ENABLE_IPC is not set on this server (set it on every node)";
  if (shm_in_ && shm_in_->attach(req, &why)) {
    kv->respond(req.head, KVMessage(), nullptr);
    return;
  }
  KVMessage refused;
  refused.head.status = CARAVAN_ERR_SERVER;
  auto text = std::make_shared<std::string>(why);
  refused.vals = Blob{text->data(), text->size(), text};
  kv->respond(req.head, std::move(refused), nullptr);
}

void Member::receive_through_shm(const KVMessage& km, ps::Message& msg) {
  const wire::Header& h = km.head;
  try {
    if (msg.meta.request) {
      if (!shm_in_) throw Error(CARAVAN_ERR_SERVER, "BYTEPS_ENABLE_IPC is not set on this server");
      if (msg.meta.push)
        msg.data[1] = view(shm_in_->values(h.sender, km.vals));
      else
        shm_in_->expect_answer(h.sender, h.customer_id, h.timestamp, km.vals);
    } else if (shm_out_) {
      // A pull's answer, in this node's own slot: the values of the key it
      // asked for.
      if (auto a = shm_out_->answered(h.sender, h.customer_id, h.timestamp, km.vals.data,
                                      km.vals.len)) {
        msg.data[0] = a->keys;
        msg.data[1] = a->vals;
      }
    }
  } catch (const std::exception& e) {
    // Delivered without values: the application's checks name the key.
    CARAVAN_LOG(ERROR) << "ps: values of request " << h.timestamp << " from node " << h.sender
                       << " through shared memory: " << e.what();
  }
}

void Member::RegisterRecvBuffer(ps::Message& msg) {
  if (msg.data.size() < 2 || msg.data[0].size() < sizeof(ps::Key))
    throw ps_error("ps::KVServer::RegisterRecvBuffer: give keys and values");
  auto key = std::make_pair(msg.meta.sender, msg.meta.key);
  std::lock_guard<std::mutex> lock(customers_mu_);
  receive_into_[key] = msg.data[1];
}

void Member::route(KVMessage&& km) {
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
  } else if (km.keys.len || (h.flags & wire::kShm)) {
    msg.data.push_back(view(km.keys));
    msg.data.push_back((h.flags & wire::kShm) ? ps::SArray<char>() : view(km.vals));
    if (km.lens.len) msg.data.push_back(view(km.lens));
    if (h.flags & wire::kShm) receive_through_shm(km, msg);
    if (msg.data[0].size() >= sizeof(ps::Key))
      std::memcpy(&msg.meta.key, msg.data[0].data(), sizeof(ps::Key));
    msg.meta.val_len = h.status;
    ps::SArray<char>& vals = msg.data[1];
    msg.meta.dst_dev_type = ps::CPU;
    msg.meta.dst_dev_id = h.device_type == ps::CPU ? h.device_id : 0;
    vals.dst_device_type_ = ps::CPU;
    vals.dst_device_id_ = msg.meta.dst_dev_id;
  }
  // An answer through the van to a request that took a slot: a push's,
  // or a pull's that the server could not write there. Frees the slot.
  if (shm_out_ && !msg.meta.request && !(h.flags & wire::kShm))
    shm_out_->answered(h.sender, h.customer_id, h.timestamp, nullptr, 0);
  bool worker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker = role_ == Role::kWorker;
  }
  // As in ps-lite: a worker routes by the message's customer; servers and
  // the scheduler run one customer per app, whose id is the app id.
  auto key = std::make_pair(h.app_id, worker ? h.customer_id : h.app_id);
  if (msg.meta.request && msg.meta.push && msg.data.size() > 1) receive_into_registered(msg);
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto it = customers_.find(key);
  if (it == customers_.end()) {
    auto& waiting = early_[key];
    if (waiting.empty()) {
      int sender = h.sender;
      std::thread([this, key, sender] { watch_unclaimed(key, sender); }).detach();
    }
    waiting.push_back(std::move(msg));
    return;
  }
  it->second->Accept(msg);
}

void Member::receive_into_registered(ps::Message& msg) {
  ps::SArray<char> into;
  {
    std::lock_guard<std::mutex> lock(customers_mu_);
    if (receive_into_.empty()) return;
    auto it = receive_into_.find(std::make_pair(msg.meta.sender, msg.meta.key));
    if (it == receive_into_.end()) return;
    into = it->second;
  }
  ps::SArray<char>& vals = msg.data[1];
  if (into.size() != vals.size()) {
    // Delivered where the van put it: the handler sees the values, and
    // this says why they are not in the registered memory.
    CARAVAN_LOG(ERROR) << "ps: a push of key " << msg.meta.key << " from node " << msg.meta.sender
                       << " has " << vals.size() << " bytes but the buffer registered for it"
                       << " holds " << into.size() << "; not received into it";
    return;
  }
  // The van received the bytes elsewhere: this is the one copy into the
  // memory the server registered (an RDMA van writes there directly).
  std::memcpy(into.data(), vals.data(), vals.size());
  into.dst_device_type_ = vals.dst_device_type_;
  into.dst_device_id_ = vals.dst_device_id_;
  vals = into;
}

std::string Member::unclaimed(const std::pair<int, int>& key, int sender) const {
  return "messages for app " + std::to_string(key.first) + ", customer " +
         std::to_string(key.second) + " came from node " + std::to_string(sender) +
         " but this " + role_name(role()) + " node has no such customer: the program never " +
         "made its KVServer, KVWorker or SimpleApp (bytedance/ps-lite's test_benchmark makes " +
         "DMLC_GROUP_SIZE servers: set DMLC_GROUP_SIZE=1)";
}

void Member::watch_unclaimed(std::pair<int, int> key, int sender) {
  // Half of CARAVAN_OP_TIMEOUT when shorter, so this says why before the
  // waits of the job run out and say only that they did.
  const int seconds = std::max(1, std::min(kUnclaimedSeconds, op_timeout_s() / 2));
  std::unique_lock<std::mutex> lock(customers_mu_);
  if (claimed_.wait_for(lock, std::chrono::seconds(seconds),
                        [&] { return early_.count(key) == 0; }))
    return;
  lock.unlock();
  {
    std::lock_guard<std::mutex> done(mu_);
    if (stage_ == 4) return;  // left the job: nothing is waiting on this node
  }
  // ps-lite dies here too (after 5 s); waiting on would leave the sender
  // waiting for an answer that never comes. Exiting drops this node's
  // control connection, so every node learns at once which one failed.
  Log::write(CARAVAN_LOG_FATAL, "ps: " + unclaimed(key, sender) + ", after " +
                                    std::to_string(seconds) + " s; ending this process");
  std::_Exit(1);
}

void Member::add_customer(ps::Customer* c) {
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto key = std::make_pair(c->app_id(), c->customer_id());
  if (customers_.count(key))
    throw ps_error("ps: customer (app " + std::to_string(key.first) + ", customer " +
                   std::to_string(key.second) + ") already exists on this node");
  customers_[key] = c;
  auto it = early_.find(key);
  if (it == early_.end()) return;
  for (auto& m : it->second) c->Accept(m);
  early_.erase(it);
  claimed_.notify_all();
}

void Member::remove_customer(ps::Customer* c) {
  {
    std::lock_guard<std::mutex> lock(customers_mu_);
    customers_.erase(std::make_pair(c->app_id(), c->customer_id()));
  }
  Runtime::get().node_changed();
}

ps::Customer* Member::customer(int app_id, int customer_id) const {
  std::lock_guard<std::mutex> lock(customers_mu_);
  auto it = customers_.find(std::make_pair(app_id, customer_id));
  return it == customers_.end() ? nullptr : it->second;
}

bool Member::has_customers() const {
  std::lock_guard<std::mutex> lock(customers_mu_);
  return !customers_.empty();
}

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
