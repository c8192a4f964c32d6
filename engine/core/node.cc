#include "engine/core/node.h"

#include <unistd.h>

#include <algorithm>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/net.h"
#include "engine/numa/cpu_binding.h"

namespace caravan {

Node::Node(const JobConfig& config, NodeOptions options)
    : config_(config),
      failure_observer_(std::move(options.on_failure)),
      link_(config, [this](const std::string& why) { on_failure(why); }) {
  Log::set_node_label(role_name(config.role));
  // Workers only, as in BytePS (its launcher wraps just them in numactl):
  // servers and the scheduler keep the whole machine. First, so that every
  // thread started from here on is born bound.
  if (config.role == Role::kWorker) bind_worker_cpus(CpuSettings::from_env());
  van_ = open_van(config);
  std::string host = net::advertised_host(config.node_host, config.interface);
  self_.role = config.role;
  self_.host = host;
  self_.pid = static_cast<int>(getpid());
  self_.preferred_rank = config.preferred_rank.value_or(-1);
  self_.van_address = van_->listen(host, config.port);
  CARAVAN_VLOG(1) << "van '" << van_->name() << "' (" << van_->properties().transport
                  << ") listening at " << self_.van_address;
  table_ = link_.join(self_);
  Log::set_node_label(std::string(role_name(self_.role)) + " " + std::to_string(self_.rank));
  kv_ = std::make_unique<KVEndpoint>(*van_, self_.id, std::move(options.on_request));
  if (options.on_routed) kv_->set_routed_handler(std::move(options.on_routed));
  kv_->set_reliability(config_.resend_timeout_ms, config_.drop_percent);
  if (config_.job_token) {
    std::vector<int32_t> ids;
    for (const NodeInfo& n : table_) ids.push_back(n.id);
    kv_->set_seal(
        std::make_unique<MessageSeal>(*config_.job_token, link_.job_nonce(), self_.id, ids));
  }
  // Workers talk only to servers and servers only to workers, unless the
  // application (ps-lite) may address any node.
  Role peers = config.role == Role::kWorker ? Role::kServer : Role::kWorker;
  for (const NodeInfo& n : table_) {
    bool wanted = options.full_mesh ? (n.id != self_.id && !n.van_address.empty()) : n.role == peers;
    if (wanted) {
      van_->connect(static_cast<uint64_t>(n.id), n.van_address);
      peers_.push_back(n.id);
    }
  }
  kv_->start();
  link_.barrier(kServerGroup + kWorkerGroup, false, config.connect_timeout_s);
  CARAVAN_VLOG(1) << "joined the job as " << self_.describe();
}

Node::~Node() {
  if (kv_) kv_->stop();
  link_.close();
  kv_.reset();
  van_.reset();
}

std::vector<const NodeInfo*> Node::nodes_of(Role role) const {
  std::vector<const NodeInfo*> out;
  for (auto& n : table_)
    if (n.role == role) out.push_back(&n);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  return out;
}

void Node::on_failure(const std::string& why) {
  if (kv_) kv_->fail_all(CARAVAN_ERR_PEER_LOST, why);
  // A van may keep messages queued for a peer that died (and keep reading
  // the caller's memory for them); closing every path settles them now, so
  // no operation waits for a send that will never complete.
  if (van_) {
    for (int id : peers_) {
      try {
        van_->disconnect(static_cast<uint64_t>(id));
      } catch (const Error& e) {
        CARAVAN_LOG(DEBUG) << e.what();
      }
    }
  }
  if (failure_observer_) failure_observer_(why);
}

void Node::leave(int timeout_s) {
  link_.barrier(kServerGroup + kWorkerGroup, true, timeout_s);
  kv_->stop();
  link_.close();
  CARAVAN_VLOG(1) << "left the job";
}

}  // namespace caravan
