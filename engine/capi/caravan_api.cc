// The public C API's operations (caravan.h): push_pull, broadcast and the
// sharded collectives, poll and wait, declarations and telemetry. Joining
// and leaving the job: job_calls.cc; failures: api_errors.h.
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/capi/api_errors.h"
#include "engine/capi/api_state.h"
#include "engine/capi/telemetry.h"
#include "engine/worker/worker.h"

struct caravan_handle_s {
  std::shared_ptr<caravan::Worker::Op> op;
  // An allgather or all-to-all of a worker that does not shard (worker.h):
  // a broadcast of each shard or block, `op` the first and these the
  // others; `then` copies an all-to-all's blocks into place once all are
  // done (run once, and cleared).
  std::vector<std::shared_ptr<caravan::Worker::Op>> more;
  std::function<void()> then;
  bool device = false;  // the DeviceStager's op
  // For telemetry (push_pulls only): recorded once, when seen done.
  std::string tensor;
  size_t bytes = 0;
  std::chrono::steady_clock::time_point submitted;
  bool counted = true;
};

namespace caravan {
namespace {

using capi::check_tensor;
using capi::fail;
using capi::guarded;
using capi::not_initialized;
using capi::State;
using capi::state;

// A push_pull seen done: into the telemetry, once.
void count(State& s, caravan_handle_s& h) {
  if (h.counted || !s.telemetry) return;
  h.counted = true;
  s.telemetry->record(h.tensor, h.bytes, h.submitted, std::chrono::steady_clock::now());
}

// push_pull, or (`broadcast`) a broadcast from worker rank `root`,
// asynchronously; `device`: data is in device memory, ordered on `stream`.
// `sharded`: kSumShards or kGatherShards (then `broadcast` is false).
int start(const char* name, void* data, size_t count, caravan_dtype dtype, int priority,
          bool broadcast, int root, caravan_handle* out, bool device = false,
          void* stream = nullptr, int sharded = kSum) {
  return guarded([&]() -> int {
    if (!out) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "out handle pointer is NULL");
    *out = nullptr;
    if (int rc = check_tensor(name, data, count, dtype)) return rc;
    auto s = state();
    if (!s) return not_initialized();
    // Here for every kind of worker; a negative root must never read as kSum.
    if (broadcast && (root < 0 || root >= s->size()))
      return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                  std::string("broadcast of tensor '") + name + "' from rank " +
                      std::to_string(root) + ": the job has " + std::to_string(s->size()) +
                      " workers, ranks 0 to " + std::to_string(s->size() - 1));
    if (!broadcast) root = sharded;
    if (sharded != kSum) {
      const size_t size = static_cast<size_t>(s->size());
      if (count % size != 0)
        return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                    std::string(kind_name(kind_of(sharded))) + " of tensor '" + name +
                        "': " + std::to_string(count) + " elements are no multiple of the job's " +
                        std::to_string(size) + " workers (one equal shard each)");
      if (!s->worker->shards()) {
        // A job of one worker, or machines of several worker processes:
        // the sum of the whole tensor holds every shard's sum, and a
        // broadcast of each shard from its worker gathers them byte for
        // byte.
        auto h = std::make_unique<caravan_handle_s>();
        if (sharded == kSumShards) {
          h->op = s->worker->submit(name, data, count, dtype, priority, kSum);
        } else {
          const size_t shard = count / size;
          for (size_t r = 0; r < size; ++r) {
            auto op = s->worker->submit(std::string(name) + "@shard" + std::to_string(r),
                                        static_cast<char*>(data) + r * shard * dtype_size(dtype),
                                        shard, dtype, priority, static_cast<int>(r));
            (r == 0 ? h->op : h->more.emplace_back()) = std::move(op);
          }
        }
        *out = h.release();
        return 0;
      }
    }
    auto h = std::make_unique<caravan_handle_s>();
    h->device = device;
    if (!broadcast && sharded == kSum && s->telemetry) {
      h->tensor = name;
      h->bytes = count * dtype_size(dtype);
      h->submitted = std::chrono::steady_clock::now();
      h->counted = false;
    }
    if (device)
      h->op = s->device_stager(name).submit(name, data, count, dtype, priority, root, stream);
    else
      h->op = s->worker->submit(name, data, count, dtype, priority, root);
    *out = h.release();
    return 0;
  });
}

// An all-to-all (caravan_alltoall_async).
int start_alltoall(const char* name, const void* send, void* recv, size_t count,
                   caravan_dtype dtype, int priority, caravan_handle* out) {
  return guarded([&]() -> int {
    if (!out) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "out handle pointer is NULL");
    *out = nullptr;
    // Which buffer is NULL, before check_tensor's words for one ("data").
    for (auto [what, buffer] : {std::pair<const char*, const void*>{"send", send}, {"recv", recv}})
      if (name && *name && !buffer)
        return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                    std::string(what) + " is NULL for tensor '" + name + "'");
    if (int rc = check_tensor(name, recv, count, dtype)) return rc;
    auto s = state();
    if (!s) return not_initialized();
    const size_t size = static_cast<size_t>(s->size());
    const size_t bytes = count * dtype_size(dtype);
    if (count % size != 0)
      return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                  std::string("alltoall of tensor '") + name + "': " + std::to_string(count) +
                      " elements are no multiple of the job's " + std::to_string(size) +
                      " workers (one equal block each)");
    const char* from = static_cast<const char*>(send);
    char* to = static_cast<char*>(recv);
    if (from < to + bytes && to < from + bytes)
      return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                  std::string("alltoall of tensor '") + name +
                      "': send and recv overlap; give it two separate buffers");
    auto h = std::make_unique<caravan_handle_s>();
    if (s->worker->shards() && size > 1) {
      h->op = s->worker->submit_alltoall(name, send, recv, count, dtype, priority);
      *out = h.release();
      return 0;
    }
    // One worker, or machines of several worker processes: a broadcast of
    // each worker's whole `send` into a scratch buffer of its own, whose
    // block for this worker is copied into place once all are done.
    const size_t me = static_cast<size_t>(s->worker->rank()), block = bytes / size;
    std::shared_ptr<char[]> scratch(new char[size * bytes]);
    std::memcpy(scratch.get() + me * bytes, send, bytes);
    for (size_t r = 0; r < size; ++r) {
      auto op =
          s->worker->submit(std::string(name) + "@from" + std::to_string(r),
                            scratch.get() + r * bytes, count, dtype, priority, static_cast<int>(r));
      (r == 0 ? h->op : h->more.emplace_back()) = std::move(op);
    }
    h->then = [scratch, to, me, block, bytes, size] {
      for (size_t r = 0; r < size; ++r)
        std::memcpy(to + r * block, scratch.get() + r * bytes + me * block, block);
    };
    *out = h.release();
    return 0;
  });
}

// Runs a handle's `then` once, when it is seen done.
void settle(caravan_handle_s& h) {
  if (!h.then) return;
  h.then();
  h.then = nullptr;
}

// The blocking calls: their asynchronous form, then caravan_wait.
template <class StartAsync>
int wait_for(StartAsync&& start_async) {
  caravan_handle h = nullptr;
  int rc = start_async(&h);
  return rc != 0 ? rc : caravan_wait(h);
}

}  // namespace
}  // namespace caravan

using namespace caravan;

extern "C" {

int caravan_push_pull_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int priority, caravan_handle* out) {
  return start(name, data, count, dtype, priority, false, kSum, out);
}

int caravan_broadcast_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int root_rank, int priority, caravan_handle* out) {
  return start(name, data, count, dtype, priority, true, root_rank, out);
}

int caravan_broadcast(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int root_rank, int priority) {
  return wait_for([&](caravan_handle* h) {
    return caravan_broadcast_async(name, data, count, dtype, root_rank, priority, h);
  });
}

int caravan_push_pull(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int priority) {
  return wait_for([&](caravan_handle* h) {
    return caravan_push_pull_async(name, data, count, dtype, priority, h);
  });
}

int caravan_push_pull_device_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                                   int priority, void* stream, caravan_handle* out) {
  return start(name, data, count, dtype, priority, false, kSum, out, true, stream);
}

int caravan_push_pull_device(const char* name, void* data, size_t count, caravan_dtype dtype,
                             int priority, void* stream) {
  return wait_for([&](caravan_handle* h) {
    return caravan_push_pull_device_async(name, data, count, dtype, priority, stream, h);
  });
}

int caravan_broadcast_device_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                                   int root_rank, int priority, void* stream, caravan_handle* out) {
  return start(name, data, count, dtype, priority, true, root_rank, out, true, stream);
}

int caravan_broadcast_device(const char* name, void* data, size_t count, caravan_dtype dtype,
                             int root_rank, int priority, void* stream) {
  return wait_for([&](caravan_handle* h) {
    return caravan_broadcast_device_async(name, data, count, dtype, root_rank, priority, stream, h);
  });
}

int caravan_reduce_scatter_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                                 int priority, caravan_handle* out) {
  return start(name, data, count, dtype, priority, false, kSum, out, false, nullptr, kSumShards);
}

int caravan_reduce_scatter(const char* name, void* data, size_t count, caravan_dtype dtype,
                           int priority) {
  return wait_for([&](caravan_handle* h) {
    return caravan_reduce_scatter_async(name, data, count, dtype, priority, h);
  });
}

int caravan_allgather_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int priority, caravan_handle* out) {
  return start(name, data, count, dtype, priority, false, kSum, out, false, nullptr, kGatherShards);
}

int caravan_allgather(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int priority) {
  return wait_for([&](caravan_handle* h) {
    return caravan_allgather_async(name, data, count, dtype, priority, h);
  });
}

int caravan_alltoall_async(const char* name, const void* send, void* recv, size_t count,
                           caravan_dtype dtype, int priority, caravan_handle* out) {
  return start_alltoall(name, send, recv, count, dtype, priority, out);
}

int caravan_alltoall(const char* name, const void* send, void* recv, size_t count,
                     caravan_dtype dtype, int priority) {
  return wait_for([&](caravan_handle* h) {
    return caravan_alltoall_async(name, send, recv, count, dtype, priority, h);
  });
}

int caravan_declare_tensor(const char* name, const char* const* keys, const char* const* values,
                           size_t num_params) {
  return guarded([&]() -> int {
    if (!name || !*name) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "tensor name is NULL or empty");
    if (num_params > 0 && (!keys || !values))
      return fail(CARAVAN_ERR_INVALID_ARGUMENT, std::string("tensor '") + name +
                                                    "': " + std::to_string(num_params) +
                                                    " parameters, but keys or values is NULL");
    TensorParamList params;
    for (size_t i = 0; i < num_params; ++i) {
      if (!keys[i] || !values[i])
        return fail(
            CARAVAN_ERR_INVALID_ARGUMENT,
            std::string("tensor '") + name + "': key or value " + std::to_string(i) + " is NULL");
      params.emplace_back(keys[i], values[i]);
    }
    auto s = state();
    if (!s) return not_initialized();
    s->worker->declare_compression(name, params);
    return 0;
  });
}

int caravan_poll(caravan_handle h) {
  return guarded([&]() -> int {
    if (!h || !h->op) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "handle is NULL");
    auto s = state();
    if (!s) return not_initialized();
    std::string error;
    int rc =
        h->device ? s->device_stager("").poll(*h->op, &error) : s->worker->poll(*h->op, &error);
    for (size_t i = 0; i < h->more.size() && rc == 1; ++i)
      rc = s->worker->poll(*h->more[i], &error);
    if (rc == 1) {
      settle(*h);
      count(*s, *h);
    }
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
    int rc = owned->device ? s->device_stager("").wait(*owned->op, &error)
                           : s->worker->wait(*owned->op, &error);
    // Every one is waited for, so that none still writes into the tensor.
    for (auto& op : owned->more) {
      std::string why;
      int each = s->worker->wait(*op, &why);
      if (rc == 0 && each != 0) {
        rc = each;
        error = why;
      }
    }
    if (rc == 0) {
      settle(*owned);
      count(*s, *owned);
    }
    return rc < 0 ? fail(rc, error) : 0;
  });
}

int caravan_get_pushpull_stats(const char* name, caravan_pushpull_stats* out) {
  return guarded([&]() -> int {
    if (!out) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "out is NULL");
    if (out->struct_size < sizeof(caravan_pushpull_stats))
      return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                  "out->struct_size is " + std::to_string(out->struct_size) +
                      ", expected at least " + std::to_string(sizeof(caravan_pushpull_stats)));
    auto s = state();
    if (!s) return not_initialized();
    if (!s->telemetry)
      return fail(CARAVAN_ERR_STATE, "push_pull telemetry is off (BYTEPS_TELEMETRY_ON=0)");
    Telemetry::Stats t = s->telemetry->stats(name ? name : "");
    out->window_s = t.window_s;
    out->operations = t.operations;
    out->bytes = t.bytes;
    out->mbytes_per_s = t.mbytes_per_s;
    out->p50_us = t.p50_us;
    out->p90_us = t.p90_us;
    out->p99_us = t.p99_us;
    return 0;
  });
}

}  // extern "C"
