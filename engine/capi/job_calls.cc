// The C API's calls that join and leave the job (init, shutdown,
// suspend, resume, rejoin) and what the worker says of itself.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>

#include "caravan/caravan.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/capi/api_errors.h"
#include "engine/capi/api_state.h"
#include "engine/capi/start_worker.h"

namespace caravan::capi {
namespace {

std::mutex g_mu;  // guards g_state's lifetime (init/shutdown)
std::shared_ptr<State> g_state;

}  // namespace

std::shared_ptr<State> state() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state;
}

int not_initialized() {
  return fail(CARAVAN_ERR_NOT_INITIALIZED,
              "caravan_init() has not been called (or caravan_shutdown() was)");
}

namespace {

// What the worker says of itself (rank, size, ...), or NOT_INITIALIZED.
int ask_worker(int (Worker::*question)() const) {
  auto s = state();
  return s ? ((*s->worker).*question)() : not_initialized();
}

}  // namespace
}  // namespace caravan::capi

using namespace caravan;
using namespace caravan::capi;

extern "C" {

namespace {

// caravan_init, and the joins of caravan_resume and caravan_rejoin
// (`resuming`, asking for node rank `resume_rank`; `regrouped`: the
// scheduler has the job's counts, and this worker comes from
// `regrouped_from`).
int join_job(bool resuming, int resume_rank, bool regrouped = false,
             JobConfig::Generation regrouped_from = {}) {
  constexpr int kJoinTries = 8;
  return guarded([&]() -> int {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_state) return fail(CARAVAN_ERR_STATE, "caravan_init() was already called");
    Log::configure_from_env();
    auto s = std::make_shared<State>();
    // Another node lost while this one joins (CARAVAN_ELASTIC) makes a
    // generation that never started: join the next.
    for (int tries = 1;; ++tries) {
      try {
        s->worker = start_worker(&s->config, resuming, resume_rank, regrouped, regrouped_from);
        break;
      } catch (const Error& e) {
        if (e.code() != CARAVAN_ERR_REGROUPED || tries == kJoinTries) throw;
        CARAVAN_LOG(WARNING) << e.what() << "; joining the next generation";
        resuming = true;  // a worker new to the job stays new (with its counts)
      }
    }
    if (s->config.telemetry != 0)
      s->telemetry =
          std::make_unique<Telemetry>(s->config.telemetry_window_s, s->config.telemetry == 1);
    g_state = std::move(s);
    return 0;
  });
}

}  // namespace

int caravan_init(void) { return join_job(false, -1); }

namespace {

// Set by caravan_suspend for caravan_resume. Guarded by g_mu.
std::optional<Suspended> g_suspended;

// caravan_shutdown, and caravan_suspend when `suspend`.
int leave_job(bool suspend) {
  return guarded([suspend]() -> int {
    std::shared_ptr<State> s;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      s.swap(g_state);
    }
    if (!s) return not_initialized();
    int rc = 0;
    try {
      Suspended was{s->worker->rank(), s->worker->local_size(), false};
      if (suspend) was.in_job = s->worker->suspend();
      if (!suspend) s->worker->leave();
      std::lock_guard<std::mutex> lock(g_mu);
      if (suspend) g_suspended = was;
    } catch (const Error& e) {
      rc = fail(e.code(), e.what());
    }
    s.reset();
    return rc;
  });
}

}  // namespace

int caravan_shutdown(void) {
  // A worker of a regrouped job (CARAVAN_ELASTIC) that did not rejoin: the
  // scheduler awaits it in the next generation, and would keep the others
  // waiting CARAVAN_CONNECT_TIMEOUT for it. It rejoins to leave cleanly.
  bool regrouped = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    regrouped = g_state && g_state->worker->regrouped();
  }
  if (regrouped) {
    if (int rc = caravan_rejoin(); rc != 0) return rc;
  }
  return leave_job(false);
}

int caravan_suspend(void) { return leave_job(true); }

int caravan_resume(int num_workers, int num_servers, int rank) {
  int node_rank = -1;
  int rc = guarded([&]() -> int {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_state) return fail(CARAVAN_ERR_STATE, "caravan_resume(): this worker is in the job");
    if (!g_suspended)
      return fail(CARAVAN_ERR_STATE, "caravan_resume(): caravan_suspend() was not called");
    node_rank = prepare_resume(*g_suspended, num_workers, num_servers, rank);
    return 0;
  });
  if (rc != 0) return rc;
  rc = join_job(true, node_rank);
  if (rc == 0) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_suspended.reset();
  }
  return rc;
}

int caravan_rejoin(void) {
  int rank = -1;
  JobConfig::Generation from;
  int rc = guarded([&]() -> int {
    std::shared_ptr<State> s;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      if (!g_state) return not_initialized();
      if (!g_state->worker->regrouped())
        return fail(CARAVAN_ERR_STATE,
                    "caravan_rejoin(): the job has not regrouped (it does after losing a node, "
                    "with CARAVAN_ELASTIC=1, and then operations fail with "
                    "CARAVAN_ERR_REGROUPED)");
      // The node's rank: a machine of local ranks asks for its own.
      rank = g_state->worker->rank() / std::max(g_state->worker->local_size(), 1);
      from = g_state->worker->generation();
      s.swap(g_state);
    }
    // The generation is over: its node goes without a shutdown barrier
    // (a machine's local ranks pass theirs).
    s->worker->leave_generation();
    s.reset();
    return 0;
  });
  if (rc != 0) return rc;
  return join_job(true, rank, true, from);
}

int caravan_rank(void) { return ask_worker(&Worker::rank); }
int caravan_size(void) { return ask_worker(&Worker::size); }
int caravan_local_rank(void) { return ask_worker(&Worker::local_rank); }
int caravan_local_size(void) { return ask_worker(&Worker::local_size); }

}  // extern "C"
