#include "tests/support/in_process_job.h"

#include "caravan/caravan.h"
#include "engine/control/node_info.h"

namespace caravan::test {

InProcessJob::InProcessJob(int num_workers, int num_servers, JobConfig config,
                           std::vector<int> homes)
    : config_(std::move(config)) {
  config_.num_workers = num_workers;
  config_.num_servers = num_servers;
  if (config_.partition_bytes == 0) config_.partition_bytes = 4096000;
  if (config_.root_uri.empty()) config_.root_uri = "in-process";
  reducer_ = open_reducer(config_.reducer.empty() ? "cpu" : config_.reducer, config_.plugin_path);
  // Reserved: the endpoints' handlers keep pointers to their members.
  servers_.reserve(static_cast<size_t>(num_servers));
  workers_.reserve(static_cast<size_t>(num_workers));
  std::vector<ServerPeer> addresses;
  for (int r = 0; r < num_servers; ++r) {
    Member& m = servers_.emplace_back();
    m.van = std::make_unique<FakeVan>(network_);
    m.van->listen("", 0);
    m.kv = std::make_unique<KVEndpoint>(*m.van, server_id(r),
                                        [&m](KVMessage&& req) { m.sum->handle(std::move(req)); });
    m.sum = std::make_unique<SumServer>(*m.kv, *reducer_, config_);
    addresses.push_back(ServerPeer{server_id(r), "server " + std::to_string(r), false});
  }
  for (int r = 0; r < num_workers; ++r) {
    Member& m = workers_.emplace_back();
    m.van = std::make_unique<FakeVan>(network_);
    m.van->listen("", 0);
    m.kv = std::make_unique<KVEndpoint>(*m.van, worker_id(r), [](KVMessage&&) {});
    m.client = std::make_unique<PushPullClient>(*m.kv, addresses, config_, nullptr, homes);
  }
  for (int s = 0; s < num_servers; ++s) {
    for (int w = 0; w < num_workers; ++w) {
      Member& server = servers_[static_cast<size_t>(s)];
      Member& worker = workers_[static_cast<size_t>(w)];
      server.van->connect(static_cast<uint64_t>(worker_id(w)), worker.van->address());
      worker.van->connect(static_cast<uint64_t>(server_id(s)), server.van->address());
    }
  }
  for (auto& m : servers_) m.kv->start();
  for (auto& m : workers_) m.kv->start();
}

InProcessJob::~InProcessJob() {
  // Receiving stops first, so no handler runs into what is torn down next.
  for (auto& w : workers_) w.kv->stop();
  for (auto& s : servers_) s.kv->stop();
  for (auto& s : servers_) s.sum->clear();
  for (auto& w : workers_) {
    w.client.reset();
    w.kv.reset();
  }
  for (auto& s : servers_) {
    s.sum.reset();
    s.kv.reset();
  }
}

std::vector<int> InProcessJob::push_pull_all(const std::string& name,
                                             std::vector<std::vector<float>>& data,
                                             std::vector<std::string>* errors, int root) {
  std::vector<std::shared_ptr<Operation>> ops;
  for (size_t w = 0; w < workers_.size(); ++w)
    ops.push_back(
        workers_[w].client->submit(name, data[w].data(), data[w].size(), CARAVAN_FLOAT32, 0, root));
  std::vector<int> codes;
  if (errors) errors->assign(workers_.size(), "");
  for (size_t w = 0; w < workers_.size(); ++w) {
    std::string error;
    codes.push_back(workers_[w].client->wait(*ops[w], &error));
    if (errors) (*errors)[w] = error;
  }
  return codes;
}

}  // namespace caravan::test
