// The worker side of push_pull: declares tensors, cuts them into
// partitions, sends each partition to its server through the SendPolicy, and
// gathers the sums back into the caller's buffer. A broadcast goes the same
// way, except that only its root sends values and only the others get
// values back: the servers relay them without summing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/base/config.h"
#include "engine/base/timeline.h"
#include "engine/compress/codec.h"
#include "engine/compress/compression_spec.h"
#include "engine/ipc/worker_lane.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/worker/partition_plan.h"
#include "engine/worker/send_policy.h"
#include "engine/worker/worker.h"

namespace caravan {

class Error;

struct ServerAddress {
  int node_id;
  std::string name;  // "server 1 (pid ... at ...)"
  // It advertises this worker's host: with BYTEPS_ENABLE_IPC, values may
  // go through shared memory if the server can map this worker's.
  bool same_host = false;
};

struct TensorPlan {
  std::string name;
  size_t count = 0;
  int dtype = 0;
  bool broadcast = false;  // fixed at first use: broadcast or push_pull
  std::vector<Partition> partitions;
  bool in_flight = false;  // guarded by the client's mutex
  // BYTEPS_ENABLE_IPC: each partition's place in shared memory (a slot
  // without data goes through the van), set by the first push_pull.
  std::vector<ipc::Slot> slots;
  bool placed = false;
  // Compressed (its byteps_compressor_type, and at least
  // BYTEPS_MIN_COMPRESS_BYTES): per partition, its codec, the buffer its
  // compressed push goes out from, and the parameters that travel with it.
  CompressionSpec compression;
  std::vector<std::unique_ptr<PushCodec>> codecs;
  std::vector<std::vector<char>> payloads;
  std::vector<std::string> wire_params;
  uint64_t rounds = 0;  // push_pulls submitted: the next one's round (seeds)
  bool compressed() const { return !codecs.empty(); }
};

// One push_pull in progress. Two events finish each partition: the van is
// done reading its memory, and its sum arrived.
class Operation {
 public:
  Operation(TensorPlan* tensor, char* buffer, int broadcast_root, int my_rank)
      : plan(tensor),
        data(buffer),
        root(broadcast_root),
        sends_values(root == kSum || root == my_rank),
        gets_values(root == kSum || root != my_rank) {}
  TensorPlan* const plan;
  char* const data;
  const int root;  // kSum, or the broadcast's root rank
  // A broadcast's root sends its values and gets none back; the others
  // send none and get the root's. A push_pull does both.
  const bool sends_values;
  const bool gets_values;
  const char* what() const { return root == kSum ? "push_pull" : "broadcast"; }

  std::mutex mu;
  std::condition_variable cv;
  size_t events_left = 0;
  std::vector<bool> answered;  // per partition
  // Per partition: its answer may land in `data` itself (the van took a
  // lend, van_v2.h); taken back when the answer lands elsewhere or never
  // comes, so nothing writes there once the operation is over.
  std::vector<bool> lent;
  // Per partition: the van is done reading it. The caller's buffer is the
  // van's to read until then (van_v2.h), and a sum can come back first (the
  // server has every byte before the van reports done); it waits here and
  // the done handler stores it.
  std::vector<bool> sent;
  std::vector<std::unique_ptr<KVMessage>> early_sums;
  int code = 0;
  std::string error;
  bool done = false;
  bool abandoned = false;  // timed out: late answers are counted, not stored
  // Microseconds after submission, for the PS_VERBOSE=2 pipelining line:
  // the first partition's sum arriving before the last partition left
  // shows pulls overlapping pushes.
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
  long long first_answer_us = -1;
  long long last_sent_us = -1;
  // Told once, after done is set; may be empty.
  std::function<void()> on_done;
  // A staged operation (submit's `staged`): told, on the receiving thread,
  // of each partition whose result is in `data`. May be empty.
  std::function<void(size_t index)> stored;
  int priority = 0;
  uint64_t round = 0;  // of its tensor: with the key, the compressors' seed
  // The timeline (BYTEPS_TRACE_ON): this push_pull's step of its tensor
  // and, when that step is traced, per partition when each stage began
  // (Timeline::now_us), under mu.
  int step = -1;
  bool traced = false;
  std::vector<int64_t> queued_us, send_us, sent_us, answer_us;
};

class PushPullClient {
 public:
  // Reads partition_bytes, op_timeout_s, scheduling_credit,
  // debug_sample_tensor and enable_ipc from `config`.
  // `timeline`: where the stages of traced steps go (null: not tracing).
  PushPullClient(KVEndpoint& kv, std::vector<ServerAddress> servers, const JobConfig& config,
                 std::unique_ptr<Timeline> timeline = nullptr);

  // Starts a push_pull (root kSum) or a broadcast from worker rank `root`
  // (0..num_workers-1, checked by the caller); throws caravan::Error for
  // misuse found up front. `on_done` runs on the receiving thread when the
  // operation ends.
  // With `staged`, no partition is sent until release() says its values
  // are in `data` (a device tensor being copied in), and `stored` hears of
  // each partition's result as it lands.
  std::shared_ptr<Operation> submit(const std::string& name, void* data, size_t count, int dtype,
                                    int priority, int root, std::function<void()> on_done = {},
                                    bool staged = false,
                                    std::function<void(size_t index)> stored = {});
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
  TensorPlan& declare(const std::string& name, size_t count, int dtype, bool broadcast);
  // Gives the partitions bound for servers on this host their slots.
  void place_in_shared_memory(TensorPlan& plan);
  // An operation that will never be sent: the tensor is free again.
  void withdraw(Operation& op);
  // Hands partition `index` to the send policy (send_mu_ held).
  void queue(const std::shared_ptr<Operation>& op, size_t index);
  void send_partition(const std::shared_ptr<Operation>& op, size_t index, int priority);
  void finish_event(Operation& op, int code, const std::string& error);
  // A partition that failed before the van took it (its credit and both
  // of its events, with `e`).
  void never_sent(Operation& op, const Error& e);
  // Takes back every lend store_sum has not settled (van_v2.h, unlend).
  void take_back_lends(Operation& op);
  // Copies partition `index`'s sum from answer `r` (or `slot`) into the
  // caller's buffer.
  // Returns why it could not ("" when stored).
  std::string store_sum(Operation& op, size_t index, const ipc::Slot* slot, const KVMessage& r,
                        bool sample);
  // Compresses partition `index` for the wire (a compressed tensor).
  void compress_partition(Operation& op, size_t index, KVMessage& msg);
  // The partitions' codecs for a compressed tensor (plan's partitions set).
  void make_codecs(TensorPlan& plan);
  // Why answer `r` does not say the sum lies in `slot`; empty when it does.
  static std::string wrong_slot(const KVMessage& r, const ipc::Slot& slot);
  void pump();
  // The van is done sending a partition: frees its scheduling credit.
  void partition_finished();
  std::string outstanding(const Operation& op) const;
  // Timeline events of a traced operation's partition (op.traced).
  void trace_stage(Operation& op, size_t index, const char* stage, int64_t from_us,
                   int64_t to_us);
  // Its sum is stored: its pull and copy back.
  void trace_stored(Operation& op, size_t index);

  KVEndpoint& kv_;
  std::vector<ServerAddress> servers_;
  int rank_;  // this worker's

  size_t partition_bytes_;
  size_t compressed_partition_bytes_;  // of compressed tensors
  int op_timeout_s_;
  size_t min_compress_bytes_;
  bool async_;
  std::string plugin_path_;
  std::string sample_tensor_;
  // By server rank; null where values go through the van.
  std::vector<std::unique_ptr<ipc::WorkerLane>> lanes_;

  std::mutex mu_;  // tensors_, keys_, in-flight counts
  std::condition_variable idle_cv_;
  int ops_in_flight_ = 0;
  std::unordered_map<std::string, std::unique_ptr<TensorPlan>> tensors_;
  std::unordered_map<uint64_t, std::string> keys_;
  std::unordered_map<std::string, CompressionSpec> compression_;  // declared, by tensor

  std::mutex send_mu_;  // send_policy_ and sequence_ (pump() sends outside it)
  std::unique_ptr<SendPolicy> send_policy_;
  uint64_t sequence_ = 0;
  std::unique_ptr<Timeline> timeline_;
};

}  // namespace caravan
