// The public C API (caravan.h): argument checks, the process-wide worker
// state, and the translation of exceptions into error codes and messages.
#include <memory>
#include <mutex>
#include <string>

#include "caravan/caravan.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/core/node.h"
#include "engine/reducer/reducer.h"
#include "engine/worker/push_pull.h"

struct caravan_handle_s {
  std::shared_ptr<caravan::Operation> op;
};

namespace caravan {
namespace {

struct WorkerState {
  JobConfig config;
  std::unique_ptr<Node> node;
  std::unique_ptr<PushPullClient> client;
};

std::mutex g_mu;  // guards g_state's lifetime (init/shutdown)
std::shared_ptr<WorkerState> g_state;

thread_local int t_code = 0;
thread_local std::string t_message;

int fail(int code, const std::string& message) {
  t_code = code;
  t_message = message;
  CARAVAN_LOG(DEBUG) << "API error " << code << ": " << message;
  return code;
}

std::shared_ptr<WorkerState> state() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_state;
}

// Runs `body`, turning every exception into a code and a message: the
// library never throws into, or aborts, its caller.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(CARAVAN_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(CARAVAN_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(CARAVAN_ERR_INTERNAL, "unknown exception");
  }
}

const char* generic_message(int code) {
  switch (code) {
    case CARAVAN_OK: return "success";
    case CARAVAN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CARAVAN_ERR_NOT_INITIALIZED: return "caravan_init() has not been called";
    case CARAVAN_ERR_MISMATCH: return "tensor reused with another count or dtype";
    case CARAVAN_ERR_BUSY: return "tensor already has a push_pull in flight";
    case CARAVAN_ERR_TIMEOUT: return "deadline passed";
    case CARAVAN_ERR_PEER_LOST: return "a node of the job failed";
    case CARAVAN_ERR_CONFIG: return "bad configuration";
    case CARAVAN_ERR_PLUGIN: return "plugin could not be loaded";
    case CARAVAN_ERR_TRANSPORT: return "transport failure";
    case CARAVAN_ERR_STATE: return "call not valid in this state";
    case CARAVAN_ERR_INTERNAL: return "internal error";
    case CARAVAN_ERR_SERVER: return "a server refused the request";
  }
  return "unknown error code";
}

int check_tensor(const char* name, void* data, size_t count, caravan_dtype dtype) {
  if (!name || !*name) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "tensor name is NULL or empty");
  if (!data) return fail(CARAVAN_ERR_INVALID_ARGUMENT, std::string("data is NULL for tensor '") + name + "'");
  if (count == 0) return fail(CARAVAN_ERR_INVALID_ARGUMENT, std::string("count is 0 for tensor '") + name + "'");
  if (dtype_size(dtype) == 0)
    return fail(CARAVAN_ERR_INVALID_ARGUMENT, "dtype " + std::to_string(static_cast<int>(dtype)) +
                                                  " of tensor '" + name + "' is not a caravan_dtype");
  if (count > SIZE_MAX / dtype_size(dtype))
    return fail(CARAVAN_ERR_INVALID_ARGUMENT, std::string("count of tensor '") + name + "' overflows size_t");
  return 0;
}

int not_initialized() {
  return fail(CARAVAN_ERR_NOT_INITIALIZED, "caravan_init() has not been called (or caravan_shutdown() was)");
}

}  // namespace
}  // namespace caravan

using namespace caravan;

extern "C" {

int caravan_init(void) {
  return guarded([]() -> int {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_state) return fail(CARAVAN_ERR_STATE, "caravan_init() was already called");
    Log::configure_from_env();
    auto s = std::make_shared<WorkerState>();
    s->config = JobConfig::from_env();
    if (s->config.role != Role::kWorker)
      return fail(CARAVAN_ERR_STATE, std::string("DMLC_ROLE=") + role_name(s->config.role) +
                                         ": caravan_init() joins as a worker; run the " +
                                         role_name(s->config.role) + " with caravan-server");
    NodeOptions options;
    options.on_request = [](KVMessage&& req) {
      CARAVAN_LOG(WARNING) << "worker: dropping a request from node " << req.head.sender << " ("
                           << req.peer << "): workers serve no requests";
    };
    s->node = std::make_unique<Node>(s->config, std::move(options));
    std::vector<ServerAddress> servers;
    for (const NodeInfo* n : s->node->nodes_of(Role::kServer))
      servers.push_back(ServerAddress{n->id, n->describe(), n->host == s->node->self().host});
    s->client = std::make_unique<PushPullClient>(s->node->kv(), std::move(servers), s->config);
    g_state = std::move(s);
    return 0;
  });
}

int caravan_shutdown(void) {
  return guarded([]() -> int {
    std::shared_ptr<WorkerState> s;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      s.swap(g_state);
    }
    if (!s) return not_initialized();
    int rc = 0;
    try {
      s->client->drain();
      s->node->leave(s->config.op_timeout_s);
    } catch (const Error& e) {
      rc = fail(e.code(), e.what());
    }
    s->client.reset();
    s->node.reset();
    return rc;
  });
}

int caravan_rank(void) {
  auto s = state();
  return s ? s->node->self().rank : not_initialized();
}

int caravan_size(void) {
  auto s = state();
  return s ? s->config.num_workers : not_initialized();
}

int caravan_push_pull_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int priority, caravan_handle* out) {
  return guarded([&]() -> int {
    if (!out) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "out handle pointer is NULL");
    *out = nullptr;
    if (int rc = check_tensor(name, data, count, dtype)) return rc;
    auto s = state();
    if (!s) return not_initialized();
    auto h = std::make_unique<caravan_handle_s>();
    h->op = s->client->submit(name, data, count, dtype, priority);
    *out = h.release();
    return 0;
  });
}

int caravan_push_pull(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int priority) {
  caravan_handle h = nullptr;
  int rc = caravan_push_pull_async(name, data, count, dtype, priority, &h);
  if (rc != 0) return rc;
  return caravan_wait(h);
}

int caravan_poll(caravan_handle h) {
  return guarded([&]() -> int {
    if (!h || !h->op) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "handle is NULL");
    auto s = state();
    if (!s) return not_initialized();
    std::string error;
    int rc = s->client->poll(*h->op, &error);
    return rc < 0 ? fail(rc, error) : rc;
  });
}

int caravan_wait(caravan_handle h) {
  return guarded([&]() -> int {
    if (!h || !h->op) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "handle is NULL");
    std::unique_ptr<caravan_handle_s> owned(h);
    auto s = state();
    if (!s) return not_initialized();
    std::string error;
    int rc = s->client->wait(*owned->op, &error);
    return rc < 0 ? fail(rc, error) : 0;
  });
}

const char* caravan_strerror(int code) {
  if (code == t_code && code != 0 && !t_message.empty()) return t_message.c_str();
  return generic_message(code);
}

}  // extern "C"
