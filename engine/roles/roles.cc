#include "engine/roles/roles.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics_server.h"
#include "engine/control/scheduler_link.h"
#include "engine/control/scheduler_service.h"
#include "engine/node/node.h"
#include "engine/reducer/reducer.h"
#include "engine/server/sum_server.h"

namespace caravan {

int run_scheduler(const JobConfig& config) {
  auto metrics = serve_metrics(config, Role::kScheduler, 0, "scheduler");
  SchedulerService service(config);
  return service.run();
}

namespace {

// One generation of the job as a server: joins, sums until the job ends,
// is suspended or regroups without a lost node, and leaves. Sets
// *suspended and, for the next generation, *rank and (after a regroup)
// *regrouped_from.
int serve(const JobConfig& joined_with, Reducer& reducer, bool* suspended, int* rank,
          JobConfig::Generation* regrouped_from) {
  JobConfig config = joined_with;
  std::unique_ptr<SumServer> server;
  std::mutex server_mu;
  std::condition_variable server_ready;
  bool failed = false;  // the job failed (or regrouped); guarded by server_mu
  // Workers may send as soon as the start-up barrier opens, which is
  // before the Node constructor returns and `server` exists. Should the
  // job fail before that, there will be no server: the request is dropped,
  // so the receiving thread is free to stop (the constructor waits for it).
  NodeOptions options;
  options.on_request = [&](KVMessage&& req) {
    std::unique_lock<std::mutex> lock(server_mu);
    server_ready.wait(lock, [&] { return server != nullptr || failed; });
    if (server) server->handle(std::move(req));
  };
  options.on_failure = [&](int, const std::string&) {
    {
      std::lock_guard<std::mutex> lock(server_mu);
      failed = true;
    }
    server_ready.notify_all();
  };
  Node node(config, std::move(options));
  // After a suspend the counts are those the workers resumed with.
  config.num_workers = static_cast<int>(node.nodes_of(Role::kWorker).size());
  config.num_servers = static_cast<int>(node.nodes_of(Role::kServer).size());
  *rank = node.self().rank;
  {
    std::lock_guard<std::mutex> lock(server_mu);
    server = std::make_unique<SumServer>(node.kv(), reducer, config);
  }
  server_ready.notify_all();
  CARAVAN_LOG(INFO) << "serving " << config.num_workers << " workers with reducer "
                    << reducer.description();
  int rc = 0;
  try {
    *suspended = node.leave(-1);
  } catch (const Error& e) {
    if (node.regrouped()) {
      // CARAVAN_ELASTIC: the rounds of this generation are dropped; the
      // workers left push their step again in the next.
      CARAVAN_LOG(WARNING) << e.what() << "; serving the next generation";
      *suspended = true;
      *regrouped_from = node.generation();
    } else {
      CARAVAN_LOG(ERROR) << e.what();
      rc = 1;
    }
  }
  // The server holds messages the van lent (queued requests, the rounds'
  // first pushes): it must be gone before the node closes the van, and the
  // receive thread that feeds it must stop first (leave() stops it only
  // when the job ends cleanly).
  node.kv().stop();
  std::lock_guard<std::mutex> lock(server_mu);
  server.reset();
  return rc;
}

}  // namespace

int run_server(const JobConfig& config) {
  auto reducer = open_reducer(config.reducer, config.plugin_path);
  JobConfig next = config;
  for (;;) {
    bool suspended = false;
    int rank = -1;
    int rc = 0;
    try {
      rc = serve(next, *reducer, &suspended, &rank, &next.regrouped_from);
    } catch (const LeftOutOfJob& e) {
      CARAVAN_VLOG(1) << "leaving: " << e.what();
      return 0;
    } catch (const Error& e) {
      // Another node was lost while this one joined a generation, or this
      // one is new to a running job (CARAVAN_ELASTIC), which regroups to
      // take it in.
      if (e.code() != CARAVAN_ERR_REGROUPED) throw;
      CARAVAN_LOG(WARNING) << e.what() << "; joining the next generation";
      suspended = true;
    }
    if (rc != 0 || !suspended) return rc;
    // The same rank again where the resumed job has room for it.
    next.resume_rank = rank;
    next.resuming = true;
    CARAVAN_VLOG(1) << "waiting up to " << config.resume_timeout_s
                    << " s (CARAVAN_RESUME_TIMEOUT) for the job's next generation";
  }
}

int run_role_from_env(const char* program) {
  Log::configure_from_env();
  try {
    JobConfig config = JobConfig::from_env();
    switch (config.role) {
      case Role::kScheduler:
        return run_scheduler(config);
      case Role::kServer:
        return run_server(config);
      case Role::kWorker:
        std::fprintf(stderr,
                     "%s: DMLC_ROLE=worker: this program runs the scheduler and server roles; "
                     "workers are your training program linked with libcaravan\n",
                     program);
        return 2;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return e.code() == CARAVAN_ERR_CONFIG ? 2 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", program, e.what());
    return 1;
  }
  return 1;
}

}  // namespace caravan
