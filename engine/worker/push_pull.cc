#include "engine/worker/push_pull.h"

#include <chrono>
#include <cstring>
#include <optional>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/compress/codec.h"
#include "engine/control/node_info.h"
#include "engine/ipc/segment_names.h"
#include "engine/kv/sample_log.h"
#include "engine/worker/payload.h"

namespace caravan {

using Then = PartitionFlight::Then;

PushPullClient::PushPullClient(KVEndpoint& kv, std::vector<ServerPeer> servers,
                               const JobConfig& config, std::unique_ptr<Timeline> timeline,
                               std::vector<int> homes)
    : kv_(kv),
      servers_(std::move(servers)),
      rank_((kv.id() - worker_id(0)) / 2),
      num_workers_(config.num_workers),
      homes_(std::move(homes)),
      partition_bytes_(static_cast<size_t>(config.partition_bytes)),
      compressed_partition_bytes_(static_cast<size_t>(config.compressed_partition_bytes
                                                          ? config.compressed_partition_bytes
                                                          : config.partition_bytes)),
      op_timeout_s_(config.op_timeout_s),
      min_compress_bytes_(static_cast<size_t>(config.min_compress_bytes)),
      async_(config.enable_async),
      plugin_path_(config.plugin_path),
      sample_tensor_(config.debug_sample_tensor),
      tensors_(
          [this](const std::string& name, size_t count, int dtype, OpKind kind,
                 const CompressionSpec* spec) { return plan(name, count, dtype, kind, spec); }),
      sends_(config.scheduling_credit) {
  for (const ServerPeer& s : servers_)
    if (s.share > 0) shares_.push_back(s.share);
  if (shares_.size() != servers_.size()) shares_.clear();
  observers_.push_back(&metrics_);
  if (timeline) {
    std::vector<std::string> names;
    for (const ServerPeer& s : servers_) names.push_back(s.name);
    timeline_ = std::make_unique<TimelineObserver>(std::move(timeline), std::move(names));
    observers_.push_back(timeline_.get());
  }
  if (!config.enable_ipc) return;
  for (const ServerPeer& s : servers_) {
    if (s.same_host) {
      std::string names = ipc::lane_prefix(config.root_uri, config.root_port, s.node_id, kv_.id());
      lanes_.push_back(
          std::make_unique<ipc::WorkerLane>(kv_, s.node_id, s.name, names, op_timeout_s_));
    } else {
      lanes_.push_back(nullptr);
      CARAVAN_LOG(INFO) << s.name << " is on another host: values for it go through the van";
    }
  }
}

PushPullClient::~PushPullClient() = default;

std::unique_ptr<TensorPlan> PushPullClient::plan(const std::string& name, size_t count, int dtype,
                                                 OpKind kind, const CompressionSpec* spec) {
  auto plan = std::make_unique<TensorPlan>();
  plan->name = name;
  plan->count = count;
  plan->dtype = dtype;
  plan->kind = kind;
  const size_t bytes = count * dtype_size(dtype);
  const bool asked = spec && spec->compressed();
  if (asked && kind != OpKind::kPushPull)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' has compression parameters, but a " +
                                          kind_name(kind) +
                                          " sends values as they are; give it another name");
  const bool compressed = asked && bytes >= min_compress_bytes_;
  if (asked && !compressed) {
    CARAVAN_LOG(INFO) << "tensor '" << name << "' (" << bytes
                      << " bytes) travels uncompressed: under BYTEPS_MIN_COMPRESS_BYTES="
                      << min_compress_bytes_;
  }
  const int num_servers = static_cast<int>(servers_.size());
  if (kind == OpKind::kReduceScatter || kind == OpKind::kAllgather)
    plan->partitions = plan_shards(name, bytes, dtype_size(dtype), partition_bytes_, num_servers,
                                   shares_, num_workers_, homes_);
  else if (kind == OpKind::kAlltoall)
    plan->partitions = plan_blocks(name, bytes, dtype_size(dtype), partition_bytes_, num_servers,
                                   shares_, num_workers_, rank_, homes_);
  else
    plan->partitions = plan_partitions(name, bytes, dtype_size(dtype),
                                       compressed ? compressed_partition_bytes_ : partition_bytes_,
                                       num_servers, shares_);
  if (compressed) {
    plan->payload = make_compressed_payload(*plan, *spec, plugin_path_);
  } else if (!lanes_.empty() && kind == OpKind::kPushPull) {
    // The others go through the van: shared memory saves a copy of what
    // every worker sends and gets back, and their workers send or get
    // nothing for most partitions.
    std::vector<ipc::WorkerLane*> lanes;
    for (auto& l : lanes_) lanes.push_back(l.get());
    plan->payload = make_slot_payload(*plan, lanes);
  } else {
    plan->payload = make_values_payload();
  }
  return plan;
}

void PushPullClient::declare_compression(const std::string& name, const TensorParamList& params) {
  CompressionSpec spec = CompressionSpec::parse(name, params);
  if (spec.compressed() && async_)
    throw Error(CARAVAN_ERR_CONFIG, "tensor '" + name +
                                        "': compression needs synchronous rounds (the server "
                                        "compresses each round's sum), and BYTEPS_ENABLE_ASYNC=1 "
                                        "is set");
  if (spec.compressed()) load_compressor(spec, plugin_path_);
  tensors_.declare_compression(name, std::move(spec));
}

std::shared_ptr<Operation> PushPullClient::submit(const std::string& name, void* data, size_t count,
                                                  int dtype, int priority, int root,
                                                  std::function<void()> on_done, bool staged,
                                                  std::function<void(size_t index)> stored) {
  uint64_t round = 0;
  TensorPlan& plan = tensors_.start(name, count, dtype, kind_of(root), &round);
  auto op =
      std::make_shared<Operation>(plan, static_cast<char*>(data), root, rank_, priority, round);
  op->on_done = std::move(on_done);
  op->stored = std::move(stored);
  launch(op, staged);
  return op;
}

std::shared_ptr<Operation> PushPullClient::submit_alltoall(const std::string& name,
                                                           const void* send, void* recv,
                                                           size_t count, int dtype, int priority) {
  uint64_t round = 0;
  TensorPlan& plan = tensors_.start(name, count, dtype, OpKind::kAlltoall, &round);
  // Sent blocks are only ever read from `send`.
  char* from = const_cast<char*>(static_cast<const char*>(send));
  char* to = static_cast<char*>(recv);
  auto op = std::make_shared<Operation>(plan, from, kExchangeBlocks, rank_, priority, round, to);
  const size_t block = count / static_cast<size_t>(num_workers_) * dtype_size(dtype);
  const size_t mine = static_cast<size_t>(rank_) * block;
  std::memcpy(to + mine, from + mine, block);
  launch(op, false);
  return op;
}

void PushPullClient::launch(const std::shared_ptr<Operation>& op, bool staged) {
  for (OperationObserver* o : observers_) o->submitted(*op);
  // Outside every lock: placing in shared memory may wait for a server's
  // answer, which the receiving thread delivers.
  try {
    op->tensor().payload->prepare();
  } catch (...) {
    withdraw(*op);
    throw;
  }
  if (staged) return;
  // An allgather's and an all-to-all's requests for the others' values go
  // before this worker's own: a server answers a partition once every
  // worker that takes part asked for it, and requests queued behind a
  // shard's upload on the same connection held every download until every
  // upload was over (0.72 of the links' bound with dedicated servers,
  // bench/cluster/run.sh --workloads ag64M).
  const bool requests_first = op->kind() == OpKind::kAllgather || op->kind() == OpKind::kAlltoall;
  for (int pass = requests_first ? 0 : 1; pass < 2; ++pass)
    for (size_t i = 0; i < op->partitions(); ++i)
      if (!requests_first || op->sends_values(i) == (pass == 1)) queue(op, i);
  pump();
}

void PushPullClient::release(const std::shared_ptr<Operation>& op, size_t index) {
  queue(op, index);
  pump();
}

void PushPullClient::pump() {
  // Sends never report back from inside Van::send (van.h), so this is
  // never re-entered; two threads pumping at once each take their own.
  while (std::optional<PendingSend> next = sends_.next()) next->start();
}

void PushPullClient::trace_hooks(const std::shared_ptr<Operation>& op,
                                 std::function<void(const char*, size_t, int64_t, int64_t)>* trace,
                                 std::function<void()>* done) {
  if (timeline_) timeline_->stager_hooks(op, trace, done);
}

void PushPullClient::queue(const std::shared_ptr<Operation>& op, size_t index) {
  op->mark_queued(index, Timeline::now_us());
  sends_.add(op->priority(), [this, op, index] { send(op, index); });
}

const ServerPeer& PushPullClient::server_of(const Operation& op, size_t index) const {
  return servers_[static_cast<size_t>(op.partition(index).server)];
}

void PushPullClient::send(const std::shared_ptr<Operation>& op, size_t index) {
  if (!op->begin_send(index))
    return end_unsent(*op, index, CARAVAN_ERR_TIMEOUT,
                      "abandoned by its caller after CARAVAN_OP_TIMEOUT; not sent");
  const Partition& part = op->partition(index);
  TensorPlan& plan = op->tensor();
  const ServerPeer& server = server_of(*op, index);
  bool sample = !sample_tensor_.empty() && plan.name == sample_tensor_;
  auto key = std::make_shared<uint64_t>(part.key);
  KVMessage msg;
  // Without kPull, the server answers once the round is summed, with no
  // values: a reduce-scatter's partition of another worker's shard.
  const bool pull = op->gets_values(index) || op->kind() != OpKind::kReduceScatter;
  msg.head.flags = wire::kPush | (pull ? wire::kPull : 0u) | (sample ? wire::kSample : 0u);
  if (int source = op->source_of(index); source != kSum) {
    msg.head.flags |= wire::kBroadcast | (op->kind() == OpKind::kAlltoall ? wire::kDirect : 0u);
    msg.head.cmd = source;
  }
  msg.head.priority = op->priority();
  msg.head.dtype = static_cast<uint8_t>(plan.dtype);
  msg.keys = Blob{key.get(), sizeof(uint64_t), key};
  try {
    plan.payload->fill(*op, index, msg);
  } catch (const Error& e) {
    return end_unsent(*op, index, e.code(), e.what());
  }
  CARAVAN_VLOG(2) << op->what() << ": send '" << plan.name << "' partition " << index << "/"
                  << op->partitions() << " (key " << part.key << ", " << part.bytes
                  << " B, priority " << op->priority() << ") to " << server.name << " "
                  << plan.payload->route(index);
  CARAVAN_SAMPLE_LOG(sample) << "sample '" << plan.name << "' partition " << index
                             << " push: " << sample_values(op->at(index), part.bytes, plan.dtype);
  // A large answer lands in the tensor itself where the van can put it
  // there, saving a copy; a small one costs less to copy than to arrange.
  bool lent = false;
  if (plan.payload->lendable(*op, index)) {
    try {
      lent = kv_.lend_values(part.key, op->at(index), part.bytes);
    } catch (const Error& e) {
      return end_unsent(*op, index, e.code(), e.what());
    }
  }
  if (!op->on_wire(index, lent)) {
    if (lent) kv_.unlend_values(part.key);
    return end_unsent(*op, index, CARAVAN_ERR_TIMEOUT,
                      "abandoned by its caller after CARAVAN_OP_TIMEOUT; not sent");
  }
  try {
    kv_.request(
        server.node_id, std::move(msg),
        [this, op, index](KVMessage&& r) { on_answer(op, index, std::move(r)); },
        [this, op, index](caravan_status s) { on_sent(op, index, s); });
  } catch (const Error& e) {
    end_unsent(*op, index, e.code(), e.what());
  }
}

void PushPullClient::on_sent(const std::shared_ptr<Operation>& op, size_t index,
                             caravan_status status) {
  // Credit is freed when the van is done sending, not when the sum comes
  // back: the sum waits for every worker, and workers whose queues differ
  // would otherwise each hold credit the others' rounds need.
  sends_.finished();
  pump();
  Then then = op->sent(index, status == CARAVAN_STATUS_OK);
  for (OperationObserver* o : observers_) o->sent(*op, index);
  if (then == Then::kEnded)
    return end_failed(*op, index, CARAVAN_ERR_TRANSPORT,
                      "sending to " + server_of(*op, index).name + " failed (van status " +
                          std::to_string(status) + ")");
  if (then == Then::kStore) store(*op, index, *op->take_answer(index));
}

void PushPullClient::on_answer(const std::shared_ptr<Operation>& op, size_t index,
                               KVMessage&& answer) {
  // Before SENT the answer waits in the flight (kNothing); after a failed
  // send it is late, and the partition is over already.
  if (op->answered(index, answer) == Then::kStore) store(*op, index, answer);
}

void PushPullClient::store(Operation& op, size_t index, const KVMessage& r) {
  const ServerPeer& server = server_of(op, index);
  if (r.is_error()) {
    std::string why = r.error_text();
    if (r.head.status != CARAVAN_ERR_PEER_LOST) why = server.name + ": " + why;
    return end_failed(op, index, r.head.status, why);
  }
  // Not stored (the tensor is its caller's again), but counted: once every
  // late answer is in, the operation ends and its tensor is free.
  if (op.abandoned())
    return end_failed(op, index, CARAVAN_ERR_TIMEOUT, "answered after its caller gave up");
  Payload& payload = *op.tensor().payload;
  std::string wrong = payload.check(op, index, r);
  if (!wrong.empty())
    return end_failed(op, index, CARAVAN_ERR_SERVER,
                      server.name + " answered tensor '" + op.tensor().name + "' partition " +
                          std::to_string(index) + " with " + wrong);
  const Partition& part = op.partition(index);
  // The lend is settled here: used, or (the answer landed elsewhere, or
  // none was made) taken back, so nothing lands in the tensor later.
  if (op.settle_lend(index) && r.vals.data != op.at(index)) kv_.unlend_values(part.key);
  try {
    payload.store(op, index, r);
  } catch (const Error& e) {
    return end_failed(op, index, CARAVAN_ERR_SERVER, server.name + ": " + e.what());
  }
  CARAVAN_SAMPLE_LOG(r.head.flags & wire::kSample)
      << "sample '" << op.tensor().name << "' partition " << index
      << " pull: " << sample_values(op.at(index), part.bytes, op.tensor().dtype);
  if (op.stored) op.stored(index);
  for (OperationObserver* o : observers_) o->stored(op, index);
  finish(op, index);
}

void PushPullClient::end_unsent(Operation& op, size_t index, int code, const std::string& why) {
  // The send queue handed it out: its credit returns (the caller's pump
  // goes on with what it freed).
  sends_.finished();
  end_failed(op, index, code, why);
}

void PushPullClient::end_failed(Operation& op, size_t index, int code, const std::string& why) {
  op.fail(code, why);
  if (op.settle_lend(index)) kv_.unlend_values(op.partition(index).key);
  finish(op, index);
}

void PushPullClient::finish(Operation& op, size_t index) {
  if (!op.finish(index)) return;
  // Every lend not settled yet (an abandoned operation's) goes back before
  // the operation ends: nothing may land in the tensor afterwards.
  for (uint64_t key : op.take_lends()) kv_.unlend_values(key);
  for (OperationObserver* o : observers_) o->ended(op);
  // The tensor is free before its caller can see the operation done: one
  // that polls and at once push_pulls the same tensor again must not find
  // it still in flight (BUSY).
  tensors_.finish(op.tensor());
  op.complete();
  if (op.on_done) op.on_done();
}

void PushPullClient::withdraw(Operation& op) {
  op.fail(CARAVAN_ERR_STATE, "withdrawn before any partition was queued");  // not counted a success
  for (OperationObserver* o : observers_) o->ended(op);
  tensors_.finish(op.tensor());
}

int PushPullClient::poll(Operation& op, std::string* error) { return op.poll(error); }

int PushPullClient::wait(Operation& op, std::string* error) {
  auto describe = [&](const std::map<int, int>& by_server) {
    std::string s;
    for (auto& [rank, n] : by_server)
      s += (s.empty() ? "" : ", ") + servers_[static_cast<size_t>(rank)].name + " (" +
           std::to_string(n) + " partition" + (n == 1 ? "" : "s") + ")";
    return std::string(op.what()) + " of '" + op.tensor().name + "' timed out after " +
           std::to_string(op_timeout_s_) + " s (CARAVAN_OP_TIMEOUT) waiting for " + s +
           (op.kind() == OpKind::kBroadcast
                ? std::string()
                : "; a server answers once every worker has pushed, so a worker that is "
                  "behind, stopped, or push_pulls this name with another size holds it up");
  };
  int rc = op.wait(std::chrono::seconds(op_timeout_s_), error, describe);
  // The caller may free the tensor once this returns: a late answer must
  // not land in it.
  if (rc == CARAVAN_ERR_TIMEOUT)
    for (uint64_t key : op.take_lends()) kv_.unlend_values(key);
  return rc;
}

void PushPullClient::drain() { tensors_.drain(std::chrono::seconds(op_timeout_s_)); }

}  // namespace caravan
