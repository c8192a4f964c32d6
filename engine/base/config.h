// The job as the environment describes it (DMLC_*, PS_*, BYTEPS_*,
// CARAVAN_*), parsed and validated once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace caravan {

namespace auth {
class JobToken;
}

enum class Role { kScheduler, kServer, kWorker };
const char* role_name(Role r);

struct JobConfig {
  Role role = Role::kWorker;
  std::string root_uri;               // DMLC_PS_ROOT_URI
  int root_port = 0;                  // DMLC_PS_ROOT_PORT
  int num_workers = 0;                // DMLC_NUM_WORKER
  int num_servers = 0;                // DMLC_NUM_SERVER
  std::optional<int> preferred_rank;  // DMLC_WORKER_ID or CARAVAN_SERVER_ID
  std::string interface;              // DMLC_INTERFACE
  std::string node_host;              // DMLC_NODE_HOST
  int port = 0;                       // DMLC_PORT, 0 = any

  std::string van;             // plugin name or absolute path
  std::string van_source;      // "DMLC_ENABLE_RDMA=fabric", for error messages
  std::string reducer;         // CARAVAN_REDUCER, name or absolute path
  std::string plugin_path;     // CARAVAN_PLUGIN_PATH
  std::string device_reducer;  // CARAVAN_DEVICE_REDUCER: stages device tensors ("gpu")
  int64_t staging_bytes = int64_t{4} << 30;  // CARAVAN_STAGING_BYTES: staging kept for reuse
  // BYTEPS_TELEMETRY_ON: -1 unset (recorded, not logged), 0 off, 1 logged every window.
  int telemetry = -1;
  double telemetry_window_s = 10;  // CARAVAN_TELEMETRY_WINDOW_S
  // The timeline (engine/base/timeline.h).
  bool trace_on = false;               // BYTEPS_TRACE_ON
  int trace_start_step = 10;           // BYTEPS_TRACE_START_STEP
  int trace_end_step = 20;             // BYTEPS_TRACE_END_STEP (not traced itself)
  std::string trace_dir = "./trace";   // BYTEPS_TRACE_DIR
  int64_t trace_max_events = 1000000;  // CARAVAN_TRACE_MAX_EVENTS
  int metrics_port = -1;               // CARAVAN_METRICS_PORT: -1 unset, 0 any free port

  // BYTEPS_PARTITION_BYTES; 0 when unset: the job's shape chooses
  // (default_partition_bytes in engine/worker/partition_plan.h).
  int64_t partition_bytes = 0;
  // The partition size of compressed tensors: BYTEPS_PARTITION_BYTES when
  // set, else chosen with partition_bytes (engine/worker/partition_plan.h).
  int64_t compressed_partition_bytes = 0;
  // BYTEPS_MIN_COMPRESS_BYTES: smaller tensors travel uncompressed whatever
  // their compression parameters say.
  int64_t min_compress_bytes = 65536;
  int scheduling_credit = 0;            // BYTEPS_SCHEDULING_CREDIT, 0 = FIFO
  int server_sum_threads = 4;           // BYTEPS_SERVER_ENGINE_THREAD
  bool server_enable_schedule = false;  // BYTEPS_SERVER_ENABLE_SCHEDULE
  bool enable_async = false;            // BYTEPS_ENABLE_ASYNC
  bool enable_mixed_mode = false;       // BYTEPS_ENABLE_MIXED_MODE
  bool enable_ipc = false;              // BYTEPS_ENABLE_IPC
  std::string debug_sample_tensor;      // BYTEPS_DEBUG_SAMPLE_TENSOR: a tensor name
  int connect_timeout_s = 60;           // CARAVAN_CONNECT_TIMEOUT
  int resume_timeout_s = 600;           // CARAVAN_RESUME_TIMEOUT
  // CARAVAN_ELASTIC (the same on every node; the scheduler acts on it): a
  // lost worker or server regroups the job instead of ending it, while
  // CARAVAN_MIN_WORKERS remain.
  bool elastic = false;
  int min_workers = 1;  // CARAVAN_MIN_WORKERS
  int max_workers = 0;  // CARAVAN_MAX_WORKERS, 0: no bound
  // Not from the environment: this node joins a suspended job again
  // (caravan_resume; a server after a suspend), so it waits up to
  // CARAVAN_RESUME_TIMEOUT for the others, and a server leaves the counts
  // to the workers.
  bool resuming = false;
  int resume_rank = -1;  // resuming: the rank asked (a wish, not DMLC_WORKER_ID), -1 none
  // Not from the environment: a worker joining the generation after a
  // regroup (caravan_rejoin), which leaves the counts to the scheduler.
  bool regrouped = false;
  // Not from the environment: after a regroup (a worker's caravan_rejoin,
  // a server serving the next generation), the generation this node was
  // last in and how many nodes it had; its REGISTER says so
  // (NodeInfo::last_generation). number -1: none.
  struct Generation {
    int number = -1;
    int nodes = 0;
  };
  Generation regrouped_from;
  int op_timeout_s = 600;        // CARAVAN_OP_TIMEOUT
  int heartbeat_interval_s = 2;  // PS_HEARTBEAT_INTERVAL (0 = off)
  int heartbeat_timeout_s = 20;  // PS_HEARTBEAT_TIMEOUT
  int resend_timeout_ms = 0;     // PS_RESEND ? PS_RESEND_TIMEOUT : 0 (off)
  int drop_percent = 0;          // PS_DROP_MSG (testing only)
  // CARAVAN_JOB_TOKEN; null when unset. Shared, so copies of the config
  // do not copy the secret.
  std::shared_ptr<const auth::JobToken> job_token;

  // Reads and checks every variable; throws a CARAVAN_ERR_CONFIG error
  // naming the first variable at fault. `forced_role` skips DMLC_ROLE.
  // `without_servers`: a worker that needs no scheduler or server (one
  // machine), so DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT and DMLC_NUM_SERVER
  // are optional (still checked when set). `resuming` (caravan_resume):
  // DMLC_WORKER_ID may lie beyond the new DMLC_NUM_WORKER, as it then only
  // names the machine (the rank is asked for apart, as resume_rank).
  static JobConfig from_env(std::optional<Role> forced_role = std::nullopt,
                            bool without_servers = false, bool resuming = false);
};

// Maps DMLC_ENABLE_RDMA / CARAVAN_VAN to a van plugin name or path.
// Exposed for tests.
void resolve_van(JobConfig& cfg);

}  // namespace caravan
