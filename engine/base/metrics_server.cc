#include "engine/base/metrics_server.h"

#include <microhttpd.h>
#include <sys/socket.h>

#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"

namespace caravan {
namespace {

MHD_Result respond(MHD_Connection* connection, unsigned status, const std::string& body,
                   const char* type) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                    MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_Result ok = MHD_queue_response(connection, status, r);
  MHD_destroy_response(r);
  return ok;
}

MHD_Result handle(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char*, const char*, size_t*, void**) {
  auto* server = static_cast<MetricsServer*>(cls);
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0)
    return respond(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n", "text/plain");
  if (std::strcmp(url, "/metrics") != 0)
    return respond(connection, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n",
                   "text/plain");
  return respond(connection, MHD_HTTP_OK, metrics::render(server->node()),
                 "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace

MetricsServer::MetricsServer(int port, std::string node) : node_(std::move(node)) {
  daemon_ =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, static_cast<uint16_t>(port), nullptr,
                       nullptr, &handle, this, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!daemon_)
    throw config_error("CARAVAN_METRICS_PORT: cannot serve metrics on port " +
                       std::to_string(port) + " (in use, or not allowed)");
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info ? info->port : port;
}

MetricsServer::~MetricsServer() {
  if (daemon_) MHD_stop_daemon(daemon_);
}

std::unique_ptr<MetricsServer> serve_metrics(const JobConfig& config, Role role, int rank,
                                             const std::string& node) {
  if (config.metrics_port < 0) return nullptr;
  int port = config.metrics_port;
  if (port != 0) {
    if (role == Role::kServer) port += 1 + rank;
    if (role == Role::kWorker) port += 1 + config.num_servers + rank;
    if (port > 65535)
      throw config_error("CARAVAN_METRICS_PORT=" + std::to_string(config.metrics_port) + ": " +
                         node + " would serve on port " + std::to_string(port) +
                         ", past 65535; choose a lower port");
  }
  auto server = std::make_unique<MetricsServer>(port, node);
  // Shown whatever the log level: the operator asked for it and needs the port.
  LogLine(CARAVAN_LOG_INFO) << "metrics: " << node << " serves http://"
                            << (config.node_host.empty() ? "<this host>" : config.node_host) << ":"
                            << server->port() << "/metrics (CARAVAN_METRICS_PORT)";
  return server;
}

}  // namespace caravan
