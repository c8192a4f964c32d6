#include "engine/base/config.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/base/env.h"
#include "engine/base/error.h"
#include "engine/base/job_token.h"
#include "engine/base/settings.h"

namespace caravan {
namespace {

// The timeline is written after the traced steps: a folder that cannot
// hold it must stop the node at start-up, not lose the trace at the end.
void check_writable_folder(const char* var, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string probe = dir + "/.caravan-probe-" + std::to_string(getpid());
  bool ok = !ec && std::ofstream(probe).good();
  std::remove(probe.c_str());
  if (!ok)
    throw config_error(std::string(var) + "='" + dir + "': cannot create or write files there" +
                       (ec ? " (" + ec.message() + ")" : std::string()));
}

bool is_plugin_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// A plugin is named by a short name or an absolute path; anything else
// (a relative path, spaces, shell characters) is a typo worth reporting.
std::string plugin_choice(const char* var, const std::string& value) {
  if (!value.empty() && value[0] == '/') return value;
  if (is_plugin_name(value)) return value;
  throw config_error(std::string(var) + "='" + value +
                     "' is neither a plugin name (letters, digits, '-', '_') nor an absolute path");
}

Role parse_role(const std::string& v) {
  if (v == "scheduler") return Role::kScheduler;
  if (v == "server") return Role::kServer;
  if (v == "worker") return Role::kWorker;
  throw config_error("DMLC_ROLE='" + v + "' is not one of scheduler, server, worker");
}

}  // namespace

const char* role_name(Role r) {
  switch (r) {
    case Role::kScheduler:
      return "scheduler";
    case Role::kServer:
      return "server";
    case Role::kWorker:
      return "worker";
  }
  return "?";
}

void resolve_van(JobConfig& cfg) {
  if (auto v = env::get("CARAVAN_VAN")) {
    cfg.van = plugin_choice("CARAVAN_VAN", *v);
    cfg.van_source = "CARAVAN_VAN=" + *v;
    return;
  }
  auto rdma = env::get("DMLC_ENABLE_RDMA");
  if (!rdma || *rdma == "0" || *rdma == "zmq") {
    cfg.van = "zmq";
    cfg.van_source = rdma ? "DMLC_ENABLE_RDMA=" + *rdma : "the default";
  } else if (*rdma == "1" || *rdma == "ibverbs") {
    cfg.van = "verbs";
  } else if (*rdma == "fabric") {
    cfg.van = "efa";
  } else {
    cfg.van = plugin_choice("DMLC_ENABLE_RDMA", *rdma);
  }
  if (rdma) cfg.van_source = "DMLC_ENABLE_RDMA=" + *rdma;
}

JobConfig JobConfig::from_env(std::optional<Role> forced_role, bool without_servers,
                              bool resuming) {
  JobConfig c;
  c.role = forced_role ? *forced_role
                       : parse_role(env::required("DMLC_ROLE", "scheduler, server or worker"));
  std::optional<int64_t> absent;
  if (without_servers) absent = 0;
  c.root_uri = without_servers ? env::get("DMLC_PS_ROOT_URI").value_or("")
                               : env::required("DMLC_PS_ROOT_URI", "the scheduler's address");
  c.root_port = static_cast<int>(env::integer("DMLC_PS_ROOT_PORT", 1, 65535, absent));
  c.num_workers = static_cast<int>(env::required_integer("DMLC_NUM_WORKER", 1, 1 << 20));
  c.num_servers = static_cast<int>(env::integer("DMLC_NUM_SERVER", 1, 1 << 20, absent));
  if (c.role == Role::kWorker) {
    if (auto id = env::get("DMLC_WORKER_ID"))
      c.preferred_rank = static_cast<int>(
          env::parse_integer("DMLC_WORKER_ID", *id, 0, resuming ? (1 << 20) : c.num_workers - 1));
  } else if (c.role == Role::kServer) {
    if (auto id = env::get("CARAVAN_SERVER_ID"))
      c.preferred_rank =
          static_cast<int>(env::parse_integer("CARAVAN_SERVER_ID", *id, 0, c.num_servers - 1));
  }
  c.interface = env::get("DMLC_INTERFACE").value_or("");
  c.node_host = env::get("DMLC_NODE_HOST").value_or("");
  // The scheduler listens on 0.0.0.0 and vans advertise host:port, so an
  // IPv6 literal could only fail later: every node waited out
  // CARAVAN_CONNECT_TIMEOUT with "Connection refused".
  using Named = std::pair<const char*, const std::string*>;
  for (auto [var, value] :
       {Named{"DMLC_PS_ROOT_URI", &c.root_uri}, Named{"DMLC_NODE_HOST", &c.node_host}}) {
    if (value->find(':') != std::string::npos)
      throw config_error(std::string(var) + "='" + *value +
                         "' is an IPv6 address; Caravan's nodes speak IPv4: give an IPv4 "
                         "address, or a host name that has one");
  }
  c.port = static_cast<int>(env::integer("DMLC_PORT", 1, 65535, 0));
  resolve_van(c);
  c.reducer = plugin_choice("CARAVAN_REDUCER", env::get("CARAVAN_REDUCER").value_or("cpu"));
  c.plugin_path = env::get("CARAVAN_PLUGIN_PATH").value_or("");
  c.device_reducer =
      plugin_choice("CARAVAN_DEVICE_REDUCER", env::get("CARAVAN_DEVICE_REDUCER").value_or("gpu"));
  c.staging_bytes = env::integer("CARAVAN_STAGING_BYTES", 0, INT64_MAX, int64_t{4} << 30);
  if (env::get("BYTEPS_TELEMETRY_ON"))
    c.telemetry = env::boolean("BYTEPS_TELEMETRY_ON", false) ? 1 : 0;
  c.telemetry_window_s =
      static_cast<double>(env::integer("CARAVAN_TELEMETRY_WINDOW_S", 1, 86400, 10));
  c.trace_on = env::boolean("BYTEPS_TRACE_ON", false);
  c.trace_start_step = static_cast<int>(env::integer("BYTEPS_TRACE_START_STEP", 0, 1 << 30, 10));
  c.trace_end_step = static_cast<int>(env::integer("BYTEPS_TRACE_END_STEP", 1, 1 << 30, 20));
  if (c.trace_on && c.trace_end_step <= c.trace_start_step)
    throw config_error(
        "BYTEPS_TRACE_END_STEP=" + std::to_string(c.trace_end_step) +
        " must be greater than BYTEPS_TRACE_START_STEP=" + std::to_string(c.trace_start_step) +
        " (the steps traced are START to END-1)");
  c.trace_dir = env::get("BYTEPS_TRACE_DIR").value_or("./trace");
  if (c.trace_on && c.role != Role::kScheduler)
    check_writable_folder("BYTEPS_TRACE_DIR", c.trace_dir);
  c.trace_max_events = env::integer("CARAVAN_TRACE_MAX_EVENTS", 1, 1000000000, 1000000);
  c.metrics_port = static_cast<int>(env::integer("CARAVAN_METRICS_PORT", 0, 65535, -1));
  c.partition_bytes = env::integer("BYTEPS_PARTITION_BYTES", 1, INT64_MAX, 0);
  c.min_compress_bytes = env::integer("BYTEPS_MIN_COMPRESS_BYTES", 0, INT64_MAX, 65536);
  c.scheduling_credit = static_cast<int>(env::integer("BYTEPS_SCHEDULING_CREDIT", 0, 1 << 20, 0));
  c.server_sum_threads = static_cast<int>(env::integer("BYTEPS_SERVER_ENGINE_THREAD", 1, 256, 4));
  c.server_enable_schedule = env::boolean("BYTEPS_SERVER_ENABLE_SCHEDULE", false);
  c.enable_async = env::boolean("BYTEPS_ENABLE_ASYNC", false);
  c.enable_mixed_mode = env::boolean("BYTEPS_ENABLE_MIXED_MODE", false);
  c.enable_ipc = env::boolean("BYTEPS_ENABLE_IPC", false);
  c.debug_sample_tensor = env::get("BYTEPS_DEBUG_SAMPLE_TENSOR").value_or("");
  c.connect_timeout_s = static_cast<int>(env::integer("CARAVAN_CONNECT_TIMEOUT", 1, 86400, 60));
  c.op_timeout_s = static_cast<int>(env::integer("CARAVAN_OP_TIMEOUT", 1, 7 * 86400, 600));
  c.resume_timeout_s = static_cast<int>(env::integer("CARAVAN_RESUME_TIMEOUT", 1, 7 * 86400, 600));
  c.elastic = env::boolean("CARAVAN_ELASTIC", false);
  c.min_workers = static_cast<int>(env::integer("CARAVAN_MIN_WORKERS", 1, 1 << 20, 1));
  c.max_workers = static_cast<int>(env::integer("CARAVAN_MAX_WORKERS", 0, 1 << 20, 0));
  c.heartbeat_interval_s = static_cast<int>(env::integer("PS_HEARTBEAT_INTERVAL", 0, 3600, 2));
  c.heartbeat_timeout_s = static_cast<int>(env::integer("PS_HEARTBEAT_TIMEOUT", 1, 86400, 20));
  int resend_timeout = static_cast<int>(env::integer("PS_RESEND_TIMEOUT", 1, 3600 * 1000, 1000));
  c.resend_timeout_ms = env::boolean("PS_RESEND", false) ? resend_timeout : 0;
  c.drop_percent = static_cast<int>(env::integer("PS_DROP_MSG", 0, 100, 0));
  c.job_token = auth::JobToken::from_env();
  warn_unknown_settings();
  if (c.heartbeat_interval_s > 0 && c.heartbeat_timeout_s <= c.heartbeat_interval_s)
    throw config_error(
        "PS_HEARTBEAT_TIMEOUT=" + std::to_string(c.heartbeat_timeout_s) +
        " must be longer than PS_HEARTBEAT_INTERVAL=" + std::to_string(c.heartbeat_interval_s));
  return c;
}

}  // namespace caravan
