#include "engine/worker/distributed_worker.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/worker/partition_plan.h"
#include "engine/worker/server_shares.h"

namespace caravan {

std::vector<int> home_servers(const std::vector<const NodeInfo*>& workers,
                              const std::vector<const NodeInfo*>& servers, int num_workers) {
  std::vector<int> homes(static_cast<size_t>(num_workers), -1);
  std::map<std::string, std::vector<int>> servers_on;  // host -> server ranks
  for (size_t s = 0; s < servers.size(); ++s)
    servers_on[servers[s]->host].push_back(static_cast<int>(s));
  std::vector<const NodeInfo*> by_rank = workers;
  std::sort(by_rank.begin(), by_rank.end(),
            [](const NodeInfo* a, const NodeInfo* b) { return a->rank < b->rank; });
  std::map<std::string, size_t> seen;  // host -> its workers so far
  for (const NodeInfo* w : by_rank) {
    auto here = servers_on.find(w->host);
    if (here == servers_on.end() || w->rank < 0 || w->rank >= num_workers) continue;
    // Several workers on a host with several servers take turns.
    homes[static_cast<size_t>(w->rank)] = here->second[seen[w->host]++ % here->second.size()];
  }
  return homes;
}

DistributedWorker::DistributedWorker(const JobConfig& config,
                                     std::function<void(int, const std::string&)> on_failure)
    : op_timeout_s_(config.op_timeout_s), elastic_(config.elastic), size_(config.num_workers) {
  NodeOptions options;
  options.on_request = [](KVMessage&& req) {
    CARAVAN_LOG(WARNING) << "worker: dropping a request from node " << req.head.sender << " ("
                         << req.peer << "): workers serve no requests";
  };
  options.on_failure = std::move(on_failure);
  node_ = std::make_unique<Node>(config, std::move(options));
  // After a regroup the scheduler chose the counts (DMLC_NUM_WORKER is the
  // job's first).
  size_ = static_cast<int>(node_->nodes_of(Role::kWorker).size());
  std::vector<ServerPeer> servers;
  std::set<std::string> hosts, worker_hosts;
  int workers_here = 0;
  for (const NodeInfo* n : node_->nodes_of(Role::kWorker)) {
    worker_hosts.insert(n->host);
    if (n->host == node_->self().host) ++workers_here;
  }
  std::vector<bool> colocated;
  for (const NodeInfo* n : node_->nodes_of(Role::kServer)) {
    servers.push_back(ServerPeer{n->id, n->describe(), n->host == node_->self().host});
    hosts.insert(n->host);
    colocated.push_back(worker_hosts.count(n->host) > 0);
  }
  hosts.insert(worker_hosts.begin(), worker_hosts.end());
  std::vector<int> homes =
      home_servers(node_->nodes_of(Role::kWorker), node_->nodes_of(Role::kServer), size_);
  if (config.enable_mixed_mode) {
    ServerShares mixed = mixed_mode_shares(colocated, worker_hosts.size());
    for (size_t i = 0; i < mixed.shares.size(); ++i) servers[i].share = mixed.shares[i];
    if (mixed.shares.empty()) {
      CARAVAN_LOG(WARNING) << mixed.summary;
    } else {
      CARAVAN_VLOG(1) << mixed.summary;
    }
  }
  // Every worker sees the same nodes, so all choose the same partitions
  // (and so the same keys).
  JobConfig chosen = config;
  chosen.num_workers = size_;
  chosen.num_servers = static_cast<int>(servers.size());
  chosen.compressed_partition_bytes = config.partition_bytes
                                          ? config.partition_bytes
                                          : static_cast<int64_t>(kCompressedPartitionBytes);
  if (chosen.partition_bytes == 0) {
    chosen.partition_bytes = static_cast<int64_t>(default_partition_bytes(hosts.size() > 1));
    CARAVAN_VLOG(1) << "tensors are cut into partitions of at most " << chosen.partition_bytes
                    << " bytes (BYTEPS_PARTITION_BYTES is not set; the job's "
                    << (hosts.size() > 1
                            ? "servers and workers span " + std::to_string(hosts.size()) + " hosts"
                            : "servers and workers are on one host")
                    << ")";
  }
  // The process that push_pulls for a machine is its local rank 0. BytePS's
  // layout, <dir>/<local_rank>/comm.json, unless workers of the job share
  // this host (caravan-launch): then each gets a folder of its own.
  std::string trace = config.trace_dir;
  if (workers_here > 1) trace += "/worker" + std::to_string(node_->self().rank);
  client_ = std::make_unique<PushPullClient>(
      node_->kv(), std::move(servers), chosen,
      Timeline::from_config(config, trace + "/0/comm.json", node_->self().describe()),
      std::move(homes));
}

DistributedWorker::~DistributedWorker() {
  // The node first: until its receiving thread stops, finished sends and
  // answers are reported to the client.
  node_.reset();
  client_.reset();
}

void DistributedWorker::leave() {
  client_->drain();
  node_->leave(op_timeout_s_);
}

bool DistributedWorker::suspend() {
  client_->drain();
  node_->leave(op_timeout_s_, true);
  return true;
}

namespace {

Operation& operation_of(Worker::Op& op) {
  auto* o = dynamic_cast<Operation*>(&op);
  if (!o) throw Error(CARAVAN_ERR_STATE, "a handle of another worker");
  return *o;
}

}  // namespace

std::shared_ptr<Worker::Op> DistributedWorker::submit(const std::string& name, void* data,
                                                      size_t count, int dtype, int priority,
                                                      int root) {
  return explained([&] { return client_->submit(name, data, count, dtype, priority, root); });
}

std::shared_ptr<Worker::Op> DistributedWorker::submit_alltoall(const std::string& name,
                                                               const void* send, void* recv,
                                                               size_t count, int dtype,
                                                               int priority) {
  return explained(
      [&] { return client_->submit_alltoall(name, send, recv, count, dtype, priority); });
}

std::shared_ptr<Worker::Op> DistributedWorker::explained(
    const std::function<std::shared_ptr<Operation>()>& start) const {
  try {
    return start();
  } catch (const Error& e) {
    std::string why = e.what();
    int rc = explain_failure(e.code(), &why);
    if (rc == e.code()) throw;
    throw Error(rc, why);
  }
}

std::optional<Worker::Pipelined> DistributedWorker::submit_pipelined(
    const std::string& name, void* data, size_t count, int dtype, int priority, int root,
    std::function<void(size_t index)> stored) {
  PushPullClient& client = *client_;
  std::shared_ptr<Operation> op =
      client.submit(name, data, count, dtype, priority, root, {}, true, std::move(stored));
  Pipelined p;
  for (size_t i = 0; i < op->partitions(); ++i)
    p.parts.emplace_back(op->partition(i).offset, op->partition(i).bytes);
  p.release = [&client, op](size_t index) { client.release(op, index); };
  client.trace_hooks(op, &p.trace, &p.trace_done);
  p.op = std::move(op);
  return p;
}

int DistributedWorker::poll(Op& op, std::string* error) {
  return explain_failure(client_->poll(operation_of(op), error), error);
}

int DistributedWorker::wait(Op& op, std::string* error) {
  return explain_failure(client_->wait(operation_of(op), error), error);
}

int DistributedWorker::explain_failure(int rc, std::string* error) const {
  // Once the job regrouped, the node's paths are closed, and a send the
  // client still makes fails however the van says it (not connected).
  if (rc < 0 && elastic_ && node_->regrouped()) {
    if (error) *error = node_->failure();
    return CARAVAN_ERR_REGROUPED;
  }
  if (rc != CARAVAN_ERR_PEER_LOST && rc != CARAVAN_ERR_TRANSPORT) return rc;
  // A server leaving the regrouped generation may close its van paths
  // before this worker hears the scheduler; the scheduler sends its word
  // first, so a moment's wait suffices. (With no scheduler, a server lost
  // meanwhile is the next scheduler's to regroup without: the wait is for
  // it, SchedulerLink::wait_regrouped.)
  constexpr std::chrono::seconds kRegroupWord{5};
  if (elastic_ && node_->wait_regrouped(kRegroupWord)) {
    if (error) *error = node_->failure();
    return CARAVAN_ERR_REGROUPED;
  }
  // A peer lost while the scheduler too has gone quiet: a server that
  // noticed the scheduler's loss first and left ends this worker's
  // push_pull before its own heartbeat check does, and the error would name
  // only the server.
  if (error) {
    std::string note = node_->scheduler_silence();
    if (!note.empty()) *error += "; " + note;
  }
  return rc;
}

}  // namespace caravan
