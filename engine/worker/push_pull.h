// The worker side of push_pull: plans each tensor at its first use
// (partitions, keys, how its values travel: payload.h), queues each
// partition in the send order (send_queue.h), sends it to its server, and
// stores the sums into the caller's buffer as they arrive. A broadcast
// goes the same way, except that only its root sends values and only the
// others get values back: the servers relay them without summing. A
// reduce-scatter and an allgather cut the tensor into one shard a worker
// (plan_shards); each partition of a reduce-scatter is summed as a
// push_pull's but only its shard's worker gets the sum back, and each of an
// allgather is broadcast from its shard's worker. An all-to-all's blocks
// are each relayed from their sender to their one receiver (plan_blocks).
//
// A partition's life is its PartitionFlight (partition_flight.h), kept by
// its Operation (operation.h); the timeline and the metrics watch the
// operations (operation_observer.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/config.h"
#include "engine/base/timeline.h"
#include "engine/compress/compression_spec.h"
#include "engine/ipc/worker_lane.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/worker/operation.h"
#include "engine/worker/operation_observer.h"
#include "engine/worker/send_queue.h"
#include "engine/worker/tensor_table.h"

namespace caravan {

// A server as the worker sees it: its node id and how messages name it.
struct ServerPeer {
  int node_id;
  std::string name;  // "server 1 (pid ... at ...)"
  // It advertises this worker's host: with BYTEPS_ENABLE_IPC, values may
  // go through shared memory if the server can map this worker's.
  bool same_host = false;
  double share = 0;  // of the bytes it holds (server_shares.h); 0 for all: even
};

class PushPullClient {
 public:
  // Reads partition_bytes, compressed_partition_bytes, op_timeout_s,
  // min_compress_bytes, enable_async, scheduling_credit,
  // debug_sample_tensor and enable_ipc from `config`. `timeline`: where
  // the stages of traced steps go (null: not tracing).
  // `homes`: by worker rank, the server that holds that worker's shard of
  // a reduce-scatter or allgather whole (one on its host), or -1 for none
  // (plan_shards); empty: none anywhere.
  PushPullClient(KVEndpoint& kv, std::vector<ServerPeer> servers, const JobConfig& config,
                 std::unique_ptr<Timeline> timeline = nullptr, std::vector<int> homes = {});
  ~PushPullClient();

  // Starts what Worker::submit's `root` says (worker.h: a push_pull, a
  // broadcast, a reduce-scatter or an allgather; the root rank or the
  // count's shards checked by the caller); throws caravan::Error for misuse
  // found up front. `on_done` runs on the receiving thread when the
  // operation ends.
  // With `staged`, no partition is sent until release() says its values
  // are in `data` (a device tensor being copied in), and `stored` hears of
  // each partition's result as it lands.
  std::shared_ptr<Operation> submit(const std::string& name, void* data, size_t count, int dtype,
                                    int priority, int root, std::function<void()> on_done = {},
                                    bool staged = false,
                                    std::function<void(size_t index)> stored = {});
  // An all-to-all (Worker::submit_alltoall) in a job of several workers;
  // `count` a multiple of the workers, the buffers apart (all checked by
  // the caller).
  std::shared_ptr<Operation> submit_alltoall(const std::string& name, const void* send, void* recv,
                                             size_t count, int dtype, int priority);
  // Sends partition `index` of a staged operation.
  void release(const std::shared_ptr<Operation>& op, size_t index);
  // For a staged operation that the timeline traces: events of the
  // stager's stages, and the end of them (Worker::Pipelined); empty
  // functions when it is not traced.
  void trace_hooks(const std::shared_ptr<Operation>& op,
                   std::function<void(const char*, size_t, int64_t, int64_t)>* trace,
                   std::function<void()>* done);
  // 1 done, 0 pending, or the negative error (message in *error).
  int poll(Operation& op, std::string* error);
  // Blocks until done or CARAVAN_OP_TIMEOUT; 0 or the negative error.
  int wait(Operation& op, std::string* error);
  // Waits until no operation is in flight (deadline: the op timeout).
  void drain();
  // Sets tensor `name`'s compression from its byteps_* parameters, before
  // its first push_pull; throws caravan::Error naming what is wrong.
  void declare_compression(const std::string& name, const TensorParamList& params);

 private:
  // A tensor's plan at its first use (TensorTable::Planner).
  std::unique_ptr<TensorPlan> plan(const std::string& name, size_t count, int dtype, OpKind kind,
                                   const CompressionSpec* spec);
  // Prepares a submitted operation's payload and, unless `staged`, queues
  // its partitions.
  void launch(const std::shared_ptr<Operation>& op, bool staged);
  void queue(const std::shared_ptr<Operation>& op, size_t index);
  // Runs every send the queue lets go now, on the calling thread.
  void pump();
  // Sends partition `index`: the one place a push leaves from.
  void send(const std::shared_ptr<Operation>& op, size_t index);
  // The partition's two events, on the receiving thread.
  void on_sent(const std::shared_ptr<Operation>& op, size_t index, caravan_status status);
  void on_answer(const std::shared_ptr<Operation>& op, size_t index, KVMessage&& answer);
  // Writes the answer into the tensor (or says why not); the partition is over.
  void store(Operation& op, size_t index, const KVMessage& answer);
  // A partition that never reached the van: its credit back, the failure.
  void end_unsent(Operation& op, size_t index, int code, const std::string& why);
  // A failed partition is over; its lend, if any, taken back.
  void end_failed(Operation& op, size_t index, int code, const std::string& why);
  // Partition `index` is over; the last one completes the operation.
  void finish(Operation& op, size_t index);
  // An operation none of whose partitions was queued.
  void withdraw(Operation& op);
  const ServerPeer& server_of(const Operation& op, size_t index) const;

  KVEndpoint& kv_;
  const std::vector<ServerPeer> servers_;
  std::vector<double> shares_;  // the servers' shares, by rank; empty: even
  const int rank_;              // this worker's
  const int num_workers_;
  const std::vector<int> homes_;  // by worker rank: its shards' server, or -1
  const size_t partition_bytes_;
  const size_t compressed_partition_bytes_;  // of compressed tensors
  const int op_timeout_s_;
  const size_t min_compress_bytes_;
  const bool async_;
  const std::string plugin_path_;
  const std::string sample_tensor_;
  // By server rank; null where values go through the van.
  std::vector<std::unique_ptr<ipc::WorkerLane>> lanes_;

  TensorTable tensors_;
  SendQueue sends_;
  MetricsObserver metrics_;
  std::unique_ptr<TimelineObserver> timeline_;  // null: not tracing
  std::vector<OperationObserver*> observers_;
};

}  // namespace caravan
