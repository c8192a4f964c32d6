// This process as a worker of the parameter-server job: its node (van,
// scheduler link, peers) and its push_pull client, every push_pull going to
// the servers. Used by a worker alone on its machine, and by local rank 0
// on behalf of its machine (LocalWorker).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/base/config.h"
#include "engine/node/node.h"
#include "engine/worker/push_pull.h"
#include "engine/worker/worker.h"

namespace caravan {

// By worker rank, the server rank that holds its reduce-scatter and
// allgather shards (a server on its host; with several, the host's workers
// take turns), or -1 where its host has none (plan_shards).
std::vector<int> home_servers(const std::vector<const NodeInfo*>& workers,
                              const std::vector<const NodeInfo*>& servers, int num_workers);

class DistributedWorker final : public Worker {
 public:
  // Joins the job (up to CARAVAN_CONNECT_TIMEOUT); `on_failure` hears once
  // when the job fails later (NodeOptions::on_failure). Throws
  // caravan::Error.
  explicit DistributedWorker(const JobConfig& config,
                             std::function<void(int code, const std::string&)> on_failure = {});
  ~DistributedWorker() override;

  PushPullClient& client() { return *client_; }
  // Leaves the job, saying why: a failure of this process's own that the
  // scheduler could not see (a local worker it serves died). The job goes
  // on without it with CARAVAN_ELASTIC; otherwise it ends, naming why.
  void leave_job(const std::string& why) { node_->leave_job(why); }

  // Its handles are the client's Operations.
  std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                             int priority, int root) override;
  std::shared_ptr<Op> submit_alltoall(const std::string& name, const void* send, void* recv,
                                      size_t count, int dtype, int priority) override;
  std::optional<Pipelined> submit_pipelined(const std::string& name, void* data, size_t count,
                                            int dtype, int priority, int root,
                                            std::function<void(size_t index)> stored) override;
  int poll(Op& op, std::string* error) override;
  int wait(Op& op, std::string* error) override;
  void declare_compression(const std::string& name, const TensorParamList& params) override {
    client_->declare_compression(name, params);
  }
  // Waits for the push_pulls in flight and passes the job's shutdown barrier.
  void leave() override;
  bool suspend() override;
  bool regrouped() const override { return node_->regrouped(); }
  JobConfig::Generation generation() const override { return node_->generation(); }
  bool shards() const override { return true; }
  int rank() const override { return node_->self().rank; }
  int size() const override { return size_; }
  // An operation's failure explained: after a peer's loss (PEER_LOST or
  // TRANSPORT), CARAVAN_ERR_REGROUPED when the scheduler regroups the job
  // (CARAVAN_ELASTIC; its word may come just after the van's), otherwise
  // with the scheduler's silence noted. Public for a machine's local rank
  // 0, which drives the client itself (LocalWorker).
  int explain_failure(int rc, std::string* error) const;

 private:
  // Starts an operation; a failure up front explained (explain_failure).
  std::shared_ptr<Op> explained(const std::function<std::shared_ptr<Operation>()>& start) const;

  int op_timeout_s_;
  bool elastic_;
  int size_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<PushPullClient> client_;
};

}  // namespace caravan
