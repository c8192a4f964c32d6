// This process as a worker of the parameter-server job: its node (van,
// scheduler link, peers) and its push_pull client. Used by the plain
// distributed worker, and by local rank 0 on behalf of its machine.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/base/config.h"
#include "engine/node/node.h"
#include "engine/worker/push_pull.h"
#include "engine/worker/worker.h"

namespace caravan {

class JobMember {
 public:
  // Joins the job (up to CARAVAN_CONNECT_TIMEOUT); `on_failure` hears once
  // when the job fails later. Throws caravan::Error.
  explicit JobMember(const JobConfig& config,
                     std::function<void(const std::string&)> on_failure = {});
  ~JobMember();

  PushPullClient& client() { return *client_; }
  int rank() const { return node_->self().rank; }
  // Waits for the push_pulls in flight and passes the job's shutdown barrier.
  void leave();
  // Ends the job for every node, saying why: a failure of this process's
  // own that the scheduler could not see (a local worker it serves died).
  void end_job(const std::string& why) { node_->end_job(why); }

 private:
  int op_timeout_s_;
  std::unique_ptr<Node> node_;
  std::unique_ptr<PushPullClient> client_;
};

// A worker whose every push_pull goes to the servers.
class DistributedWorker final : public Worker {
 public:
  explicit DistributedWorker(const JobConfig& config)
      : member_(config), size_(config.num_workers) {}

  std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                             int priority, int root) override;
  std::optional<Pipelined> submit_pipelined(const std::string& name, void* data, size_t count,
                                            int dtype, int priority, int root,
                                            std::function<void(size_t index)> stored) override;
  int poll(Op& op, std::string* error) override;
  int wait(Op& op, std::string* error) override;
  void declare_compression(const std::string& name, const TensorParamList& params) override {
    member_.client().declare_compression(name, params);
  }
  void leave() override { member_.leave(); }
  int rank() const override { return member_.rank(); }
  int size() const override { return size_; }

 private:
  JobMember member_;
  int size_;
};

}  // namespace caravan
