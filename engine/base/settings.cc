#include "engine/base/settings.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "engine/base/log.h"

extern char** environ;

namespace caravan {

const std::vector<Setting>& known_settings() {
  static const std::vector<Setting> kSettings = {
      {"DMLC_ROLE", "required", "scheduler, server or worker"},
      {"DMLC_PS_ROOT_URI", "required (not with one worker)", "the scheduler's address"},
      {"DMLC_PS_ROOT_PORT", "required (not with one worker)", "the scheduler's port"},
      {"DMLC_NUM_WORKER", "required", "workers (machines, with BYTEPS_LOCAL_SIZE > 1)"},
      {"DMLC_NUM_SERVER", "required (not with one worker)", "servers"},
      {"DMLC_WORKER_ID", "assigned by (host, address) order", "this worker's (machine's) rank"},
      {"DMLC_RANK", "-",
       "ps-lite programs (bytedance/ps-lite) read it as the rank they give ps::StartPS"},
      {"DMLC_GROUP_SIZE", "1",
       "ps-lite programs (bytedance/ps-lite): nodes of each role per process, ranks "
       "rank*N..rank*N+N-1"},
      {"BYTEPS_LOCAL_SIZE", "1", "worker processes on this machine"},
      {"BYTEPS_LOCAL_RANK", "0", "this process's index among them"},
      {"BYTEPS_FORCE_DISTRIBUTED", "0", "1: join the scheduler and servers even with one worker"},
      {"CARAVAN_SERVER_ID", "assigned", "this server's rank"},
      {"DMLC_INTERFACE", "first non-loopback interface that is up",
       "interface whose IPv4 address this node advertises"},
      {"DMLC_NODE_HOST", "unset", "address to advertise and bind"},
      {"DMLC_PORT", "any free port", "this node's data port"},
      {"CARAVAN_SCHEDULER_FD", "unset",
       "set by caravan-launch for the scheduler it starts: its listening socket, inherited"},
      {"DMLC_ENABLE_RDMA", "zmq",
       "van: 0/zmq, 1/ibverbs (verbs), fabric (efa), ucx, or a van's name"},
      {"CARAVAN_VAN", "unset", "van plugin name or absolute path; overrides DMLC_ENABLE_RDMA"},
      {"CARAVAN_REDUCER", "cpu", "reducer plugin name or absolute path"},
      {"CARAVAN_PLUGIN_PATH", "unset", "colon-separated folders searched first for plugins"},
      {"CARAVAN_DEVICE_REDUCER", "gpu", "plugin that stages and sums CUDA tensors"},
      {"CARAVAN_STAGING_BYTES", "4294967296", "page-locked staging memory kept for reuse"},
      {"BYTEPS_PARTITION_BYTES", "4096000 on one host, 131072 across hosts",
       "tensors are cut into partitions of at most this"},
      {"BYTEPS_MIN_COMPRESS_BYTES", "65536",
       "tensors smaller than this travel uncompressed whatever their compression parameters"},
      {"BYTEPS_SCHEDULING_CREDIT", "0", "0: FIFO sends; N: priority order, N partitions at once"},
      {"BYTEPS_SERVER_ENGINE_THREAD", "4", "summation threads per server"},
      {"BYTEPS_SERVER_ENABLE_SCHEDULE", "0", "1: serve the key with the fewest rounds first"},
      {"BYTEPS_ENABLE_ASYNC", "0", "1: asynchronous training"},
      {"BYTEPS_ENABLE_MIXED_MODE", "0",
       "1: servers on worker hosts and on hosts of their own hold the shares that load every "
       "link equally"},
      {"BYTEPS_DEBUG_SAMPLE_TENSOR", "unset",
       "a tensor whose sample values are logged at each stage"},
      {"BYTEPS_ENABLE_IPC", "0",
       "1: values through shared memory between a worker and a server of a host"},
      {"BYTEPS_NUMA_ON", "1", "bind each worker to cores of its NUMA node"},
      {"BYTEPS_NUMA_DEFAULT_QUOTA", "usable cores / BYTEPS_LOCAL_SIZE",
       "physical cores per worker"},
      {"BYTEPS_CPU_BLACKLIST", "unset", "logical CPUs never used"},
      {"BYTEPS_VISIBLE_CPU_CORES", "unset", "explicit logical CPUs per local worker"},
      {"BYTEPS_MULTITHREADED_CPU", "1", "1: a worker's cores bring all their hardware threads"},
      {"BYTEPS_LOG_LEVEL", "warning", "trace, debug, info, warning, error or fatal"},
      {"BYTEPS_TELEMETRY_ON", "recorded, not logged",
       "1: log push_pull throughput and latency every window; 0: record nothing"},
      {"CARAVAN_TELEMETRY_WINDOW_S", "10", "seconds of push_pulls that telemetry figures cover"},
      {"BYTEPS_TRACE_ON", "0", "1: write the timeline of every partition's stages (Chrome trace)"},
      {"BYTEPS_TRACE_START_STEP", "10", "first step (push_pull of a tensor) traced"},
      {"BYTEPS_TRACE_END_STEP", "20", "the step at which tracing stops (not traced)"},
      {"BYTEPS_TRACE_DIR", "./trace", "where the timeline files go"},
      {"CARAVAN_METRICS_PORT", "unset: no endpoint",
       "Prometheus /metrics: scheduler on it, server r on +1+r, worker r on +1+servers+r"},
      {"CARAVAN_TRACE_MAX_EVENTS", "1000000",
       "timeline events held per process; more are counted, not kept"},
      {"PS_VERBOSE", "0", "1: control-plane events; 2: every message and partition"},
      {"CARAVAN_CONNECT_TIMEOUT", "60",
       "seconds for start-up: scheduler, registration, van probes"},
      {"CARAVAN_OP_TIMEOUT", "600", "seconds a push_pull, barrier or shutdown may wait"},
      {"CARAVAN_RESUME_TIMEOUT", "600",
       "seconds servers and the scheduler wait, after a suspend, for the workers to resume; "
       "with CARAVAN_ELASTIC, a node for a scheduler to take the job over"},
      {"CARAVAN_ELASTIC", "0",
       "1 on every node: a lost worker or server regroups the job, which goes on without it; "
       "a scheduler started again takes a running job over"},
      {"CARAVAN_MIN_WORKERS", "1", "with CARAVAN_ELASTIC: fewer workers left end the job"},
      {"CARAVAN_MAX_WORKERS", "0: no bound",
       "with CARAVAN_ELASTIC: new workers beyond it are refused"},
      {"CARAVAN_JOB_TOKEN", "unset: no authentication", "the job's shared secret"},
      {"PS_HEARTBEAT_INTERVAL", "2", "seconds between heartbeats (0: off)"},
      {"PS_RESEND", "0", "1: acknowledge every data message and resend it when none comes"},
      {"PS_RESEND_TIMEOUT", "1000", "milliseconds before a resend"},
      {"PS_DROP_MSG", "0", "testing only: percentage of received data messages dropped"},
      {"PS_HEARTBEAT_TIMEOUT", "20", "seconds of silence after which a node counts as lost"},
      {"CARAVAN_LIBRARY", "the build's or install's", "the libcaravan.so the Python packages load"},
      {"CARAVAN_PYTHON", "the interpreter Caravan was built for",
       "interpreter with torch that bpslaunch runs Python commands with"},
  };
  return kSettings;
}

const std::vector<UnsupportedSetting>& unsupported_settings() {
  static const std::vector<UnsupportedSetting> kUnsupported = {
      {"BYTEPS_PCIE_SWITCH_SIZE",
       "the local group sums on local rank 0's GPU through CUDA IPC, without PCIe switch levels"},
      {"BYTEPS_NCCL_NUM_RINGS", "the local group does not use NCCL (docs/gpu.md)"},
      {"BYTEPS_NCCL_GROUP_SIZE", "the local group does not use NCCL (docs/gpu.md)"},
  };
  return kUnsupported;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& names) {
  size_t limit = std::min<size_t>(3, std::max<size_t>(1, name.size() / 4));
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : names) {
    size_t d = edit_distance(name, candidate);
    if (d < best_distance) best = candidate, best_distance = d;
  }
  return best;
}

std::vector<std::string> unknown_settings(const std::vector<std::string>& environment) {
  std::vector<std::string> known;
  for (const Setting& s : known_settings()) known.push_back(s.name);
  std::vector<std::string> warnings;
  for (const std::string& entry : environment) {
    std::string name = entry.substr(0, entry.find('='));
    if (!starts_with(name, "DMLC_") && !starts_with(name, "BYTEPS_") && !starts_with(name, "PS_") &&
        !starts_with(name, "CARAVAN_"))
      continue;
    if (starts_with(name, "CARAVAN_VAN_") || starts_with(name, "CARAVAN_REDUCER_")) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    auto unsupported = std::find_if(unsupported_settings().begin(), unsupported_settings().end(),
                                    [&](const UnsupportedSetting& u) { return name == u.name; });
    if (unsupported != unsupported_settings().end()) {
      warnings.push_back(name +
                         " is set but Caravan does not implement it: " + unsupported->instead);
      continue;
    }
    std::string near = nearest_name(name, known);
    warnings.push_back(name + " is set but Caravan reads no such variable" +
                       (near.empty() ? std::string(" (see caravan-info for the ones it reads)")
                                     : "; did you mean " + near + "?"));
  }
  return warnings;
}

void warn_unknown_settings() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> environment;
    for (char** e = environ; e && *e; ++e) environment.emplace_back(*e);
    for (const std::string& w : unknown_settings(environment)) CARAVAN_LOG(WARNING) << w;
  });
}

}  // namespace caravan
