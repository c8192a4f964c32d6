// This process as a server or worker of the job: its van, its link to the
// scheduler, the node table and the KV endpoint, from joining to leaving.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/base/config.h"
#include "engine/base/metrics_server.h"
#include "engine/control/node_info.h"
#include "engine/control/scheduler_link.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/van/van.h"

namespace caravan {

struct NodeOptions {
  KVEndpoint::RequestHandler on_request;  // push_pull requests (servers)
  KVEndpoint::RequestHandler on_routed;   // the ps-lite layer's messages
  // Told once, on the control thread, when the job fails; `code` is the
  // link's (CARAVAN_ERR_REGROUPED: the job goes on in a next generation).
  std::function<void(int code, const std::string& why)> on_failure;
  // Connect to every node, the scheduler included (the ps-lite form);
  // otherwise workers connect only to servers and servers to workers.
  bool full_mesh = false;
};

class Node {
 public:
  // Loads the van, registers, connects to the peers and passes the start-up
  // barrier. The handlers are in place before any peer can send. Throws
  // caravan::Error.
  Node(const JobConfig& config, NodeOptions options);
  ~Node();

  // The shutdown barrier of every node; timeout_s < 0 waits as long as the
  // job is alive. Then stops receiving and hangs up. `suspend` asks that
  // the job be suspended rather than ended; returns whether it was (some
  // worker asked), in which case the servers and scheduler stay up.
  bool leave(int timeout_s, bool suspend = false);
  // A barrier of `group` (kServerGroup, kWorkerGroup, kSchedulerGroup,
  // summed).
  void barrier(int group, int timeout_s) { link_.barrier(group, false, timeout_s); }
  // Leaves a job that goes on without this node (SchedulerLink::leave_job).
  void leave_job(const std::string& why) { link_.leave_job(why); }

  const NodeInfo& self() const { return self_; }
  const std::vector<NodeInfo>& table() const { return table_; }
  // After join(): the job's generation and how many nodes it has (what a
  // node that comes back after a regroup tells the scheduler).
  JobConfig::Generation generation() const {
    return {link_.generation(), static_cast<int>(table_.size())};
  }
  std::vector<const NodeInfo*> nodes_of(Role role) const;  // ordered by rank
  KVEndpoint& kv() { return *kv_; }
  Van& van() { return *van_; }
  std::string failure() const { return link_.failure(); }
  // Whether the scheduler regrouped the job without a lost node
  // (CARAVAN_ELASTIC): this generation is over.
  bool regrouped() const { return link_.failure_code() == CARAVAN_ERR_REGROUPED; }
  // SchedulerLink::wait_regrouped.
  bool wait_regrouped(std::chrono::milliseconds deadline) { return link_.wait_regrouped(deadline); }
  // SchedulerLink::silence_note.
  std::string scheduler_silence() const { return link_.silence_note(); }

 private:
  void join(NodeOptions& options);
  // Every van path this node opened carries a round trip within
  // CARAVAN_CONNECT_TIMEOUT, or this throws naming the peers that did not
  // answer.
  void prove_van_paths();
  void teardown();
  void on_failure(const std::string& why);

  JobConfig config_;
  std::function<void(int, const std::string&)> failure_observer_;
  std::unique_ptr<Van> van_;
  SchedulerLink link_;
  NodeInfo self_;
  std::vector<NodeInfo> table_;
  // kv_ and peers_ are set by join() while the link's thread may already
  // call on_failure: joined_mu_ guards their change and its reading there.
  std::mutex joined_mu_;
  std::unique_ptr<KVEndpoint> kv_;
  std::vector<int> peers_;                  // van connections this node opened
  std::unique_ptr<MetricsServer> metrics_;  // CARAVAN_METRICS_PORT; null when unset
};

}  // namespace caravan
