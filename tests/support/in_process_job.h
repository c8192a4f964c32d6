// A parameter-server job in one process: servers (SumServer) and workers
// (PushPullClient), each with its own KVEndpoint over a FakeVan, wired as
// Node wires a real job. For tests of the data path's logic that run in
// milliseconds; the real-process jobs are in tests/integration.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/base/config.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/reducer/reducer.h"
#include "engine/server/sum_server.h"
#include "engine/worker/push_pull.h"
#include "tests/support/fake_van.h"

namespace caravan::test {

class InProcessJob {
 public:
  // `config` gives the summation and push_pull settings (num_workers and
  // num_servers are set from the counts); partition_bytes 0 means 4096000.
  // `homes`: by worker rank, the server holding its shards (plan_shards).
  InProcessJob(int num_workers, int num_servers, JobConfig config = {},
               std::vector<int> homes = {});
  ~InProcessJob();

  PushPullClient& worker(int rank) { return *workers_[static_cast<size_t>(rank)].client; }
  FakeVan& worker_van(int rank) { return *workers_[static_cast<size_t>(rank)].van; }
  KVEndpoint& worker_kv(int rank) { return *workers_[static_cast<size_t>(rank)].kv; }
  FakeVan& server_van(int rank) { return *servers_[static_cast<size_t>(rank)].van; }
  KVEndpoint& server_kv(int rank) { return *servers_[static_cast<size_t>(rank)].kv; }
  SumServer& server(int rank) { return *servers_[static_cast<size_t>(rank)].sum; }
  const JobConfig& config() const { return config_; }

  // push_pull (or what `root` says: Worker::submit) on every worker at
  // once: data[w] is worker w's tensor. Returns each worker's result code;
  // errors[w] its message.
  std::vector<int> push_pull_all(const std::string& name, std::vector<std::vector<float>>& data,
                                 std::vector<std::string>* errors = nullptr, int root = kSum);

 private:
  struct Member {
    std::unique_ptr<FakeVan> van;
    std::unique_ptr<KVEndpoint> kv;
    std::unique_ptr<SumServer> sum;          // servers
    std::unique_ptr<PushPullClient> client;  // workers
  };
  JobConfig config_;
  std::shared_ptr<FakeNetwork> network_ = std::make_shared<FakeNetwork>();
  std::unique_ptr<Reducer> reducer_;
  std::vector<Member> servers_;
  std::vector<Member> workers_;
};

}  // namespace caravan::test
