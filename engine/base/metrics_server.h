// The Prometheus endpoint (CARAVAN_METRICS_PORT): GET /metrics answers the
// process's counters (metrics.h) in the text format, served by GNU
// libmicrohttpd on its own thread. Any other path is 404.
#pragma once

#include <memory>
#include <string>

#include "engine/base/config.h"

struct MHD_Daemon;

namespace caravan {

class MetricsServer {
 public:
  // Listens on `port` of every interface (0: a free port) and labels the
  // series with `node`. Throws a config error naming CARAVAN_METRICS_PORT
  // when it cannot listen.
  MetricsServer(int port, std::string node);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  int port() const { return port_; }
  const std::string& node() const { return node_; }

 private:
  std::string node_;
  int port_ = 0;
  MHD_Daemon* daemon_ = nullptr;
};

// This node's endpoint when CARAVAN_METRICS_PORT is set (null otherwise),
// on a port of its own, so the nodes of one host never collide: the
// scheduler on the port given, server r on port + 1 + r, worker r on
// port + 1 + DMLC_NUM_SERVER + r. Logs where it serves.
std::unique_ptr<MetricsServer> serve_metrics(const JobConfig& config, Role role, int rank,
                                             const std::string& node);

}  // namespace caravan
