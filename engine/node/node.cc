#include "engine/node/node.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/base/net.h"
#include "engine/control/job_settings.h"
#include "engine/numa/cpu_binding.h"

namespace caravan {

Node::Node(const JobConfig& config, NodeOptions options)
    : config_(config),
      failure_observer_(std::move(options.on_failure)),
      link_(config, [this](const std::string& why) { on_failure(why); }) {
  try {
    join(options);
  } catch (...) {
    // Members die in reverse order, the KV endpoint before the link whose
    // failure handler uses it: tear down in the destructor's order instead.
    teardown();
    throw;
  }
}

void Node::join(NodeOptions& options) {
  Log::set_node_label(role_name(config_.role));
  // Workers only, as in BytePS (its launcher wraps just them in numactl):
  // servers and the scheduler keep the whole machine. First, so that every
  // thread started from here on is born bound.
  if (config_.role == Role::kWorker) bind_worker_cpus(CpuSettings::from_env());
  van_ = open_van(config_);
  std::string host = net::advertised_host(config_.node_host, config_.interface);
  self_.role = config_.role;
  self_.host = host;
  self_.pid = static_cast<int>(getpid());
  self_.preferred_rank = config_.resuming && config_.resume_rank >= 0
                             ? config_.resume_rank
                             : config_.preferred_rank.value_or(-1);
  self_.van_address = van_->listen(host, config_.port);
  self_.last_generation = config_.regrouped_from.number;
  self_.last_generation_nodes = config_.regrouped_from.nodes;
  self_.settings = shared_settings(config_, van_->name(), van_->properties().max_message_bytes);
  if ((config_.resuming && config_.role == Role::kServer) || config_.regrouped) {
    // The workers that resume bring the job's new counts; after a regroup
    // the scheduler has them.
    drop_counts(self_.settings);
  }
  CARAVAN_VLOG(1) << "van '" << van_->name() << "' (" << van_->properties().transport
                  << ") listening at " << self_.van_address;
  table_ = link_.join(self_, config_.resuming);
  Log::set_node_label(std::string(role_name(self_.role)) + " " + std::to_string(self_.rank));
  {
    // The link's thread may report a failure (a regroup) at any moment from
    // here on: on_failure fails the endpoint once it is published, and
    // below the endpoint learns of a failure reported before.
    auto kv = std::make_unique<KVEndpoint>(*van_, self_.id, std::move(options.on_request));
    std::lock_guard<std::mutex> lock(joined_mu_);
    kv_ = std::move(kv);
  }
  if (std::string failed = link_.failure(); !failed.empty()) {
    int code = link_.failure_code();
    kv_->fail_all(code ? code : CARAVAN_ERR_PEER_LOST, failed);
  }
  if (options.on_routed) kv_->set_routed_handler(std::move(options.on_routed));
  kv_->set_reliability(config_.resend_timeout_ms, config_.drop_percent);
  kv_->set_generation(link_.generation());
  if (config_.job_token) {
    std::vector<int32_t> ids;
    for (const NodeInfo& n : table_) ids.push_back(n.id);
    kv_->set_seal(
        std::make_unique<MessageSeal>(*config_.job_token, link_.job_nonce(), self_.id, ids));
  }
  // Workers talk only to servers and servers only to workers, unless the
  // application (ps-lite) may address any node.
  Role peers = config_.role == Role::kWorker ? Role::kServer : Role::kWorker;
  for (const NodeInfo& n : table_) {
    bool wanted =
        options.full_mesh ? (n.id != self_.id && !n.van_address.empty()) : n.role == peers;
    if (wanted) {
      van_->connect(static_cast<uint64_t>(n.id), n.van_address);
      std::lock_guard<std::mutex> lock(joined_mu_);
      peers_.push_back(n.id);
    }
  }
  kv_->start();
  prove_van_paths();
  link_.barrier(kServerGroup + kWorkerGroup, false, config_.connect_timeout_s);
  CARAVAN_VLOG(1) << "joined the job as " << self_.describe();
  metrics_ = serve_metrics(config_, self_.role, self_.rank,
                           std::string(role_name(self_.role)) + " " + std::to_string(self_.rank));
}

// A van connects lazily: a wrong advertised address (a decoy interface, a
// NAT address) would otherwise pass start-up and surface only as a
// push_pull timeout. One round trip per peer, before the start-up barrier,
// proves both directions of every path this node will use.
void Node::prove_van_paths() {
  if (peers_.empty()) return;
  auto start = std::chrono::steady_clock::now();
  auto unanswered = kv_->probe(peers_, start + std::chrono::seconds(config_.connect_timeout_s));
  if (unanswered.empty()) {
    CARAVAN_VLOG(1) << "van: reached all " << peers_.size() << " peers both ways in "
                    << std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count()
                    << " ms";
    return;
  }
  std::string who, reasons;
  for (auto& [peer, why] : unanswered) {
    const auto id = peer;  // captured below: C++17 captures no structured binding
    auto n =
        std::find_if(table_.begin(), table_.end(), [&](const NodeInfo& i) { return i.id == id; });
    who += (who.empty() ? "" : ", ") +
           (n == table_.end() ? "node " + std::to_string(id) : n->describe());
    if (!why.empty()) reasons += "; " + why;
  }
  std::string failure = link_.failure();
  // The link's code: a regroup (CARAVAN_ELASTIC) during start-up makes the
  // node join the next generation rather than fail.
  if (!failure.empty())
    throw Error(link_.failure_code(),
                failure + " (this node had not yet heard over the van from " + who + ")");
  std::string what = reasons.empty() ? "no answer to a probe within " +
                                           std::to_string(config_.connect_timeout_s) +
                                           " s (CARAVAN_CONNECT_TIMEOUT)"
                                     : reasons.substr(2);
  throw Error(CARAVAN_ERR_TRANSPORT,
              "cannot reach " + who + " over the van: " + what +
                  ". A probe goes to the peer's advertised address and its answer comes back to "
                  "this node's, " +
                  self_.van_address +
                  "; one of them is probably wrong. A node advertises DMLC_NODE_HOST if set, else "
                  "the address of the interface DMLC_INTERFACE names, else that of its first "
                  "non-loopback interface that is up: set DMLC_INTERFACE (or DMLC_NODE_HOST) on "
                  "every node to an interface (address) the other hosts can reach");
}

Node::~Node() { teardown(); }

void Node::teardown() {
  if (kv_) kv_->stop();
  link_.close();
  // The van before the endpoint: a closing van lets go of the sends it
  // still holds (their memory is the endpoint's messages') without
  // reporting them (van.h), and the endpoint's receiving thread, the only
  // one that hears of sends, has stopped already.
  van_.reset();
  kv_.reset();
}

std::vector<const NodeInfo*> Node::nodes_of(Role role) const {
  std::vector<const NodeInfo*> out;
  for (auto& n : table_)
    if (n.role == role) out.push_back(&n);
  std::sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  return out;
}

void Node::on_failure(const std::string& why) {
  metrics::registry().peers_lost.add();
  // The link's code: a regroup (CARAVAN_ELASTIC) abandons the operations
  // in flight rather than failing the job.
  int code = link_.failure_code();
  KVEndpoint* kv = nullptr;
  std::vector<int> peers;
  {
    // join() may still be building these on the caller's thread.
    std::lock_guard<std::mutex> lock(joined_mu_);
    kv = kv_.get();
    peers = peers_;
  }
  if (kv) kv->fail_all(code ? code : CARAVAN_ERR_PEER_LOST, why);
  // A van may keep messages queued for a peer that died (and keep reading
  // the caller's memory for them); closing every path makes it drop them
  // and report each as over (SENT with CLOSED, from a later poll), so no
  // operation waits for a send that will never complete.
  if (van_) {
    for (int id : peers) {
      try {
        van_->disconnect(static_cast<uint64_t>(id));
      } catch (const Error& e) {
        CARAVAN_LOG(DEBUG) << e.what();
      }
    }
  }
  if (failure_observer_) failure_observer_(code ? code : CARAVAN_ERR_PEER_LOST, why);
}

bool Node::leave(int timeout_s, bool suspend) {
  bool suspended = link_.barrier(kServerGroup + kWorkerGroup, true, timeout_s, suspend);
  kv_->stop();
  link_.close();
  CARAVAN_VLOG(1) << (suspended ? "left the job, which is suspended" : "left the job");
  return suspended;
}

}  // namespace caravan
