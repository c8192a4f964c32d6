// This process's side of push_pull, whichever way its sums are made:
// through the servers, in this process alone (a single worker), or with the
// other worker processes of this machine first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/config.h"
#include "engine/compress/compression_spec.h"

namespace caravan {

struct JobConfig;
class DeviceMemory;

// Worker::submit's `root`: a broadcast's root rank (0 or more), or one of
// these. The sharded two take a tensor of size() equal shards, rank r's
// being elements [r * count / size, (r + 1) * count / size).
constexpr int kSum = -1;           // push_pull: every worker gets the sum
constexpr int kSumShards = -2;     // every worker gets its own shard of the sum
constexpr int kGatherShards = -3;  // every worker gives its shard and gets the others'
// An all-to-all (submit_alltoall): block b of what a worker sends goes to
// worker b alone, relayed by a server.
constexpr int kExchangeBlocks = -4;

// What a `root` asks for; a tensor name is used for one kind only.
enum class OpKind { kPushPull, kBroadcast, kReduceScatter, kAllgather, kAlltoall };
inline OpKind kind_of(int root) {
  return root >= 0                 ? OpKind::kBroadcast
         : root == kSumShards      ? OpKind::kReduceScatter
         : root == kGatherShards   ? OpKind::kAllgather
         : root == kExchangeBlocks ? OpKind::kAlltoall
                                   : OpKind::kPushPull;
}
// "push_pull", "broadcast", "reduce_scatter", "allgather", "alltoall": the
// C API's words.
const char* kind_name(OpKind kind);

class Worker {
 public:
  // A push_pull in progress; what it holds is the Worker's business.
  class Op {
   public:
    virtual ~Op() = default;
  };

  virtual ~Worker() = default;

  // Starts a push_pull (root kSum), a broadcast from worker rank `root`
  // (0..size()-1, checked by the caller), a reduce-scatter or an allgather
  // (count a multiple of size(), checked by the caller); throws
  // caravan::Error for misuse found up front.
  virtual std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                                     int priority, int root) = 0;
  // 1 done, 0 pending, or the negative error (message in *error).
  virtual int poll(Op& op, std::string* error) = 0;
  // Blocks until done or CARAVAN_OP_TIMEOUT; 0 or the negative error.
  virtual int wait(Op& op, std::string* error) = 0;
  // Sets tensor `name`'s compression from its byteps_* parameters
  // (docs/compression.md), before its first push_pull; throws
  // caravan::Error naming what is wrong. A worker that sends no values
  // (a job of one worker) only checks them.
  virtual void declare_compression(const std::string& name, const TensorParamList& params) {
    CompressionSpec::parse(name, params);
  }
  // Waits for the operations in flight, then leaves the job; throws
  // caravan::Error (the process is out of the job either way).
  virtual void leave() = 0;
  // As leave(), but a job of servers is suspended rather than ended
  // (caravan_suspend). Returns whether this worker was in a job of servers,
  // which then waits for workers to resume it. Throws caravan::Error.
  virtual bool suspend() = 0;
  // Whether the job lost a node and re-forms without it (CARAVAN_ELASTIC):
  // this worker's operations fail with CARAVAN_ERR_REGROUPED, and
  // caravan_rejoin makes a new worker for the next generation.
  virtual bool regrouped() const { return false; }
  // Once regrouped(), before caravan_rejoin drops this worker: what must
  // end cleanly for the next generation to form (a machine's local ranks
  // pass their barrier). Throws caravan::Error.
  virtual void leave_generation() {}
  // The generation of the job this worker's node is in and how many nodes
  // it has (number -1: no node here), which caravan_rejoin passes on.
  virtual JobConfig::Generation generation() const { return {}; }

  // A push_pull (or broadcast) whose values are copied in from device
  // memory partition by partition while earlier partitions travel
  // (device_stager.h).
  struct Pipelined {
    std::shared_ptr<Op> op;
    // Each partition's offset and bytes in the tensor, in the order to stage them.
    std::vector<std::pair<size_t, size_t>> parts;
    // Partition `index`'s values are in `data`: send it.
    std::function<void(size_t index)> release;
    // Set when the timeline traces this operation (BYTEPS_TRACE_ON): the
    // stager's own stages of a partition (copies between device and host)
    // as events, and, once, that it has no more (the file waits for it).
    std::function<void(const char* stage, size_t index, int64_t from_us, int64_t to_us)> trace;
    std::function<void()> trace_done;
  };
  // Starts such an operation on host buffer `data`; `stored` hears, on the
  // receiving thread, of each partition (by index) whose result is in
  // `data`. nullopt when this worker cannot send partitions one by one:
  // the caller then stages the whole tensor before submit().
  virtual std::optional<Pipelined> submit_pipelined(
      const std::string& name, void* data, size_t count, int dtype, int priority, int root,
      // NOLINTNEXTLINE(performance-unnecessary-value-param): the overrides keep it
      std::function<void(size_t index)> stored) {
    return std::nullopt;
  }
  // A push_pull of device memory `data` that this worker sums on the device
  // itself (the local group, through IPC), ordered after the work queued
  // on `stream`; `device` gives the device calls. nullptr when it does not:
  // the caller stages the tensor through host memory instead.
  virtual std::shared_ptr<Op> submit_on_device(const std::string& name, void* data, size_t count,
                                               int dtype, int priority, int root, void* stream,
                                               const std::shared_ptr<DeviceMemory>& device) {
    return nullptr;
  }
  // False when push_pull never reads or writes the data (a job of one
  // worker, where the sum is the data itself): device memory needs no
  // staging then.
  virtual bool moves_values() const { return true; }
  // Whether submit() takes kSumShards and kGatherShards, and
  // submit_alltoall() works; where not, the C API makes them of a push_pull
  // of the whole tensor and of broadcasts.
  virtual bool shards() const { return false; }
  // An all-to-all of size() equal blocks (count a multiple of size(),
  // checked by the caller): block b of `send` goes to worker b, and block r
  // of `recv` comes from worker r, this worker's own copied across; the two
  // do not overlap (checked by the caller). nullptr where !shards().
  virtual std::shared_ptr<Op> submit_alltoall(const std::string& name, const void* send, void* recv,
                                              size_t count, int dtype, int priority) {
    return nullptr;
  }

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const { return 0; }
  virtual int local_size() const { return 1; }
};

}  // namespace caravan
