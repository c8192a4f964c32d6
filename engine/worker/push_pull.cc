#include "engine/base/metrics.h"
#include "engine/worker/push_pull.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/ipc/segment_names.h"
#include "engine/kv/sample_trace.h"
#include "engine/control/node_info.h"

namespace caravan {
namespace {

// Answers at least this large are received into the tensor itself where
// the van can (van_v2.h, lend); below it a copy costs less than the lend.
constexpr size_t kLendBytes = 64 * 1024;

long long micros_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t)
      .count();
}

}  // namespace

PushPullClient::PushPullClient(KVEndpoint& kv, std::vector<ServerAddress> servers,
                               const JobConfig& config, std::unique_ptr<Timeline> timeline)
    : kv_(kv),
      servers_(std::move(servers)),
      rank_((kv.id() - worker_id(0)) / 2),
      partition_bytes_(static_cast<size_t>(config.partition_bytes)),
      compressed_partition_bytes_(static_cast<size_t>(
          config.compressed_partition_bytes ? config.compressed_partition_bytes
                                            : config.partition_bytes)),
      op_timeout_s_(config.op_timeout_s),
      min_compress_bytes_(static_cast<size_t>(config.min_compress_bytes)),
      async_(config.enable_async),
      plugin_path_(config.plugin_path),
      sample_tensor_(config.debug_sample_tensor),
      send_policy_(make_send_policy(config.scheduling_credit)),
      timeline_(std::move(timeline)) {
  if (!config.enable_ipc) return;
  for (const ServerAddress& s : servers_) {
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

TensorPlan& PushPullClient::declare(const std::string& name, size_t count, int dtype,
                                    bool broadcast) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) {
    TensorPlan& t = *it->second;
    if (t.broadcast != broadcast)
      throw Error(CARAVAN_ERR_MISMATCH,
                  "tensor '" + name + "' was first used for " +
                      (t.broadcast ? "broadcast" : "push_pull") + ", now for " +
                      (broadcast ? "broadcast" : "push_pull") +
                      "; give the two operations different names");
    if (t.count != count || t.dtype != dtype)
      throw Error(CARAVAN_ERR_MISMATCH,
                  "tensor '" + name + "' was first used with " + std::to_string(t.count) + " " +
                      dtype_name(t.dtype) + " elements, now with " + std::to_string(count) + " " +
                      dtype_name(dtype));
    return t;
  }
  auto plan = std::make_unique<TensorPlan>();
  plan->name = name;
  plan->count = count;
  plan->dtype = dtype;
  plan->broadcast = broadcast;
  auto spec = compression_.find(name);
  const size_t bytes = count * dtype_size(dtype);
  const bool compressed = spec != compression_.end() && spec->second.compressed() &&
                          bytes >= min_compress_bytes_;
  if (spec != compression_.end() && spec->second.compressed() && broadcast)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name +
                                          "' has compression parameters, but a broadcast "
                                          "sends values as they are; give it another name");
  plan->partitions =
      plan_partitions(name, bytes, dtype_size(dtype),
                      compressed ? compressed_partition_bytes_ : partition_bytes_,
                      static_cast<int>(servers_.size()));
  if (compressed) {
    plan->compression = spec->second;
    make_codecs(*plan);
  } else if (spec != compression_.end() && spec->second.compressed()) {
    CARAVAN_LOG(INFO) << "tensor '" << name << "' (" << bytes
                      << " bytes) travels uncompressed: under BYTEPS_MIN_COMPRESS_BYTES="
                      << min_compress_bytes_;
  }
  for (auto& p : plan->partitions) {
    auto [k, fresh] = keys_.emplace(p.key, name);
    if (!fresh)
      throw Error(CARAVAN_ERR_MISMATCH, "tensor names '" + k->second + "' and '" + name +
                                            "' hash to the same key; rename one of them");
  }
  return *tensors_.emplace(name, std::move(plan)).first->second;
}

void PushPullClient::make_codecs(TensorPlan& plan) {
  const size_t esize = dtype_size(plan.dtype);
  for (size_t i = 0; i < plan.partitions.size(); ++i) {
    const Partition& part = plan.partitions[i];
    size_t count = part.bytes / esize;
    plan.codecs.push_back(std::make_unique<PushCodec>(
        plan.compression, static_cast<caravan_dtype>(plan.dtype), count, plugin_path_,
        "tensor '" + plan.name + "' partition " + std::to_string(i)));
    plan.payloads.emplace_back(plan.codecs.back()->max_bytes());
    std::string text = plan.compression.text() + "count=" + std::to_string(count) + "\n";
    text.resize((text.size() + 3) / 4 * 4, '\0');
    plan.wire_params.push_back(std::move(text));
  }
}

void PushPullClient::declare_compression(const std::string& name, const TensorParamList& params) {
  CompressionSpec spec = CompressionSpec::parse(name, params);
  if (spec.compressed() && async_)
    throw Error(CARAVAN_ERR_CONFIG, "tensor '" + name +
                                        "': compression needs synchronous rounds (the server "
                                        "compresses each round's sum), and BYTEPS_ENABLE_ASYNC=1 "
                                        "is set");
  if (spec.compressed()) load_compressor(spec, plugin_path_);
  std::lock_guard<std::mutex> lock(mu_);
  auto known = compression_.find(name);
  if (known != compression_.end()) {
    if (known->second.text() == spec.text()) return;
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was declared with compression '" +
                                          known->second.text() + "', now with '" + spec.text() +
                                          "'");
  }
  if (tensors_.count(name))
    throw Error(CARAVAN_ERR_MISMATCH,
                "tensor '" + name +
                    "' was already used without compression parameters; declare them before "
                    "its first push_pull");
  compression_.emplace(name, std::move(spec));
}

std::shared_ptr<Operation> PushPullClient::submit(const std::string& name, void* data,
                                                  size_t count, int dtype, int priority,
                                                  int root, std::function<void()> on_done,
                                                  bool staged,
                                                  std::function<void(size_t index)> stored) {
  std::shared_ptr<Operation> op;
  {
    std::lock_guard<std::mutex> lock(mu_);
    TensorPlan& plan = declare(name, count, dtype, root != kSum);
    if (plan.in_flight)
      throw Error(CARAVAN_ERR_BUSY, "tensor '" + name +
                                        "' already has a " + (plan.broadcast ? "broadcast" : "push_pull") +
                                        " in flight; wait for it first");
    plan.in_flight = true;
    ++ops_in_flight_;
    op = std::make_shared<Operation>(&plan, static_cast<char*>(data), root, rank_);
    op->events_left = 2 * plan.partitions.size();
    op->answered.assign(plan.partitions.size(), false);
    op->lent.assign(plan.partitions.size(), false);
    op->sent.assign(plan.partitions.size(), false);
    op->early_sums.resize(plan.partitions.size());
    op->on_done = std::move(on_done);
    op->stored = std::move(stored);
    op->priority = priority;
    op->round = plan.rounds++;
    if (timeline_) {
      op->step = timeline_->next_step(name);
      op->traced = timeline_->traced(op->step);
      if (op->traced) {
        timeline_->begin(op->step);
        size_t n = plan.partitions.size();
        op->queued_us.assign(n, 0);
        op->send_us.assign(n, 0);
        op->sent_us.assign(n, 0);
        op->answer_us.assign(n, 0);
      }
    }
  }
  // Outside mu_: placing may wait for a server's answer, which the
  // receive thread delivers, and the receive thread takes mu_ when an
  // operation ends.
  // A broadcast goes through the van: shared memory saves a copy of what
  // every worker sends, and most workers send nothing.
  if (!op->plan->placed && !lanes_.empty() && !op->plan->broadcast && !op->plan->compressed()) {
    try {
      place_in_shared_memory(*op->plan);
    } catch (...) {
      withdraw(*op);
      throw;
    }
  }
  if (staged) return op;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    for (size_t i = 0; i < op->plan->partitions.size(); ++i) queue(op, i);
  }
  pump();
  return op;
}

void PushPullClient::trace_hooks(const std::shared_ptr<Operation>& op,
                                 std::function<void(const char*, size_t, int64_t, int64_t)>* trace,
                                 std::function<void()>* done) {
  if (!op->traced) return;
  // The stager's copies back end after the operation does: the window
  // stays open for them until it says it is done.
  timeline_->begin(op->step);
  *trace = [this, op](const char* stage, size_t index, int64_t from_us, int64_t to_us) {
    trace_stage(*op, index, stage, from_us, to_us);
  };
  *done = [this] { timeline_->end(); };
}

void PushPullClient::release(const std::shared_ptr<Operation>& op, size_t index) {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    queue(op, index);
  }
  pump();
}

void PushPullClient::queue(const std::shared_ptr<Operation>& op, size_t index) {
  if (op->traced) {
    std::lock_guard<std::mutex> lock(op->mu);
    op->queued_us[index] = Timeline::now_us();
  }
  int priority = op->priority;
  send_policy_->add(PendingSend{priority, sequence_++,
                                [this, op, index, priority] { send_partition(op, index, priority); }});
}

void PushPullClient::place_in_shared_memory(TensorPlan& plan) {
  plan.slots.assign(plan.partitions.size(), ipc::Slot{});
  for (size_t server = 0; server < lanes_.size(); ++server) {
    if (!lanes_[server]) continue;
    std::vector<size_t> indices, bytes;
    for (size_t i = 0; i < plan.partitions.size(); ++i) {
      if (static_cast<size_t>(plan.partitions[i].server) != server) continue;
      indices.push_back(i);
      bytes.push_back(plan.partitions[i].bytes);
    }
    std::vector<ipc::Slot> slots = lanes_[server]->place(bytes, plan.name);
    for (size_t j = 0; j < slots.size(); ++j) plan.slots[indices[j]] = slots[j];
  }
  plan.placed = true;
}

void PushPullClient::withdraw(Operation& op) {
  if (op.traced) timeline_->end();
  {
    std::lock_guard<std::mutex> lock(mu_);
    op.plan->in_flight = false;
    --ops_in_flight_;
  }
  idle_cv_.notify_all();
}

void PushPullClient::pump() {
  // Sends never report back from inside Van::send (van.h): the loop below
  // is never re-entered, and two threads pumping at once each take their
  // own partitions under send_mu_.
  for (;;) {
    std::optional<PendingSend> next;
    {
      std::lock_guard<std::mutex> lock(send_mu_);
      next = send_policy_->next();
    }
    if (!next) break;
    next->start();
  }
}

void PushPullClient::partition_finished() {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    send_policy_->finished();
  }
  pump();
}

void PushPullClient::send_partition(const std::shared_ptr<Operation>& op, size_t index,
                                    int priority) {
  const Partition& part = op->plan->partitions[index];
  const std::string& name = op->plan->name;
  if (op->traced) {
    int64_t now = Timeline::now_us(), queued;
    {
      std::lock_guard<std::mutex> lock(op->mu);
      op->send_us[index] = now;
      queued = op->queued_us[index];
    }
    trace_stage(*op, index, "queue", queued, now);
  }
  bool sample = !sample_tensor_.empty() && name == sample_tensor_;
  const ipc::Slot* slot = op->plan->slots.empty() ? nullptr : &op->plan->slots[index];
  if (slot && !slot->data) slot = nullptr;
  auto key = std::make_shared<uint64_t>(part.key);
  KVMessage msg;
  msg.head.flags = wire::kPush | wire::kPull | (sample ? wire::kSample : 0u);
  if (op->root != kSum) {
    msg.head.flags |= wire::kBroadcast;
    msg.head.cmd = op->root;
  }
  msg.head.priority = priority;
  msg.head.dtype = static_cast<uint8_t>(op->plan->dtype);
  msg.keys = Blob{key.get(), sizeof(uint64_t), key};
  if (op->plan->compressed()) {
    try {
      compress_partition(*op, index, msg);
    } catch (const Error& e) {
      return never_sent(*op, e);
    }
  } else if (slot) {
    std::memcpy(slot->data, op->data + part.offset, part.bytes);
    auto where = std::make_shared<std::vector<uint8_t>>(ipc::encode_descriptor(slot->where));
    msg.vals = Blob{where->data(), where->size(), where};
    msg.head.flags |= wire::kShm;
  } else if (op->sends_values) {
    msg.vals = Blob{op->data + part.offset, part.bytes, nullptr};
  }
  const ServerAddress& server = servers_[static_cast<size_t>(part.server)];
  CARAVAN_VLOG(2) << op->what() << ": send '" << name << "' partition " << index << "/"
                  << op->plan->partitions.size() << " (key " << part.key << ", " << part.bytes
                  << " B, priority " << priority << ") to " << server.name
                  << (slot ? " through shared memory" : " through the van");
  CARAVAN_SAMPLE_LOG(sample) << "sample '" << name << "' partition " << index << " push: "
                      << sample_values(op->data + part.offset, part.bytes, op->plan->dtype);
  auto on_response = [this, op, index, &part, &server, slot, sample](KVMessage&& r) {
    if (r.is_error()) {
      std::string why = r.error_text();
      if (r.head.status != CARAVAN_ERR_PEER_LOST) why = server.name + ": " + why;
      finish_event(*op, r.head.status, why);
      return;
    }
    std::unique_lock<std::mutex> lock(op->mu);
    if (op->abandoned) {
      // Not stored (the tensor is its caller's again), but counted: once
      // every late answer is in, the operation ends and its tensor is free.
      lock.unlock();
      finish_event(*op, CARAVAN_ERR_TIMEOUT, "answered after its caller gave up");
      return;
    }
    std::string wrong = slot ? wrong_slot(r, *slot) : "";
    // A broadcast's root gets no values back; everyone else the partition.
    size_t expected = op->gets_values ? part.bytes : 0;
    bool compressed = op->plan->compressed();
    if (wrong.empty() && compressed != ((r.head.flags & wire::kCompressed) != 0))
      wrong = compressed ? "uncompressed values to a compressed push"
                         : "compressed values to an uncompressed push";
    else if (wrong.empty() && !slot && !compressed && r.vals.len != expected)
      wrong = std::to_string(r.vals.len) + " bytes, expected " + std::to_string(expected) +
              (op->root == kSum ? ""
                                : " (the broadcast's root, worker " + std::to_string(op->root) +
                                      ", has another count or dtype for it)");
    if (!wrong.empty()) {
      lock.unlock();
      finish_event(*op, CARAVAN_ERR_SERVER,
                   server.name + " answered tensor '" + op->plan->name + "' partition " +
                       std::to_string(index) + " with " + wrong);
      return;
    }
    op->answered[index] = true;
    if (op->traced) op->answer_us[index] = Timeline::now_us();
    if (op->first_answer_us < 0) op->first_answer_us = micros_since(op->submitted);
    if (!op->sent[index]) {
      op->early_sums[index] = std::make_unique<KVMessage>(std::move(r));
      return;  // on_sent stores it
    }
    lock.unlock();
    std::string why = store_sum(*op, index, slot, r, sample);
    if (op->traced) trace_stored(*op, index);
    finish_event(*op, why.empty() ? 0 : CARAVAN_ERR_SERVER, server.name + ": " + why);
  };
  // Credit is freed when the van is done sending, not when the sum comes
  // back: the sum waits for every worker, and workers whose queues differ
  // would otherwise each hold credit the others' rounds need.
  auto on_sent = [this, op, index, &server, slot, sample](caravan_status s) {
    partition_finished();
    std::unique_ptr<KVMessage> early;
    bool early_abandoned = false;  // an early answer its caller no longer wants: counted only
    int64_t send_us = 0, sent_us = 0;
    {
      std::lock_guard<std::mutex> lock(op->mu);
      op->last_sent_us = micros_since(op->submitted);
      op->sent[index] = true;
      if (op->traced) {
        sent_us = op->sent_us[index] = Timeline::now_us();
        send_us = op->send_us[index];
      }
      if (op->early_sums[index]) {
        if (op->abandoned)
          early_abandoned = true;
        else
          early = std::move(op->early_sums[index]);
      }
      op->early_sums[index].reset();
    }
    if (op->traced) trace_stage(*op, index, "push", send_us, sent_us);
    if (early) {
      std::string why = store_sum(*op, index, slot, *early, sample);
      if (op->traced) trace_stored(*op, index);
      finish_event(*op, why.empty() ? 0 : CARAVAN_ERR_SERVER, server.name + ": " + why);
    } else if (early_abandoned) {
      finish_event(*op, CARAVAN_ERR_TIMEOUT, "answered after its caller gave up");
    }
    if (s == CARAVAN_STATUS_OK)
      finish_event(*op, 0, "");
    else
      finish_event(*op, CARAVAN_ERR_TRANSPORT,
                   "sending to " + server.name + " failed (van status " + std::to_string(s) + ")");
  };
  // A large answer lands in the tensor itself where the van can put it
  // there, saving a copy; a small one costs less to copy than to arrange.
  // Under op->mu, so that a caller timing out (wait) either sees the lend
  // and takes it back, or has marked the operation abandoned first: then
  // nothing is sent from, or lent of, a tensor its caller may have freed.
  bool lendable = !op->plan->compressed() && !slot && op->gets_values && part.bytes >= kLendBytes;
  bool abandoned;
  try {
    std::lock_guard<std::mutex> lock(op->mu);
    abandoned = op->abandoned;
    if (!abandoned && lendable && kv_.lend_values(part.key, op->data + part.offset, part.bytes))
      op->lent[index] = true;
  } catch (const Error& e) {
    return never_sent(*op, e);
  }
  if (abandoned)
    return never_sent(*op, Error(CARAVAN_ERR_TIMEOUT, "abandoned by its caller after CARAVAN_OP_TIMEOUT; not sent"));
  try {
    kv_.request(server.node_id, std::move(msg), on_response, on_sent);
  } catch (const Error& e) {
    never_sent(*op, e);
  }
}

void PushPullClient::take_back_lends(Operation& op) {
  std::vector<uint64_t> keys;
  {
    std::lock_guard<std::mutex> lock(op.mu);
    // Every lend not yet settled by store_sum: unanswered partitions, and
    // answers an abandoned operation never stored.
    for (size_t i = 0; i < op.lent.size(); ++i)
      if (op.lent[i]) {
        op.lent[i] = false;
        keys.push_back(op.plan->partitions[i].key);
      }
  }
  for (uint64_t key : keys) kv_.unlend_values(key);
}

void PushPullClient::never_sent(Operation& op, const Error& e) {
  // Neither handler will run: account for both events here.
  partition_finished();
  finish_event(op, e.code(), e.what());
  finish_event(op, e.code(), e.what());
}

void PushPullClient::trace_stage(Operation& op, size_t index, const char* stage,
                                 int64_t from_us, int64_t to_us) {
  const Partition& part = op.plan->partitions[index];
  timeline_->add(stage, op.plan->name, from_us, to_us,
                 "\"tensor\":" + Timeline::json_string(op.plan->name) + ",\"key\":\"" +
                     std::to_string(part.key) + "\",\"partition\":" + std::to_string(index) +
                     ",\"bytes\":" + std::to_string(part.bytes) +
                     ",\"priority\":" + std::to_string(op.priority) + ",\"peer\":" +
                     Timeline::json_string(servers_[static_cast<size_t>(part.server)].name) +
                     ",\"step\":" + std::to_string(op.step) + ",\"op\":\"" + op.what() + "\"");
}

void PushPullClient::trace_stored(Operation& op, size_t index) {
  int64_t sent, answer;
  {
    std::lock_guard<std::mutex> lock(op.mu);
    sent = op.sent_us[index];
    answer = op.answer_us[index];
  }
  // The pull: from the push leaving to the sum arriving (the server's wait
  // for the other workers, its summation, the answer on the wire). A sum
  // can arrive before the van reports the push sent; then it is empty.
  trace_stage(op, index, "pull", sent, std::max(sent, answer));
  trace_stage(op, index, "copy back", std::max(sent, answer), Timeline::now_us());
}

void PushPullClient::compress_partition(Operation& op, size_t index, KVMessage& msg) {
  TensorPlan& plan = *op.plan;
  const Partition& part = plan.partitions[index];
  std::vector<char>& out = plan.payloads[index];
  size_t len = plan.codecs[index]->compress(op.data + part.offset, out.data(),
                                            round_seed(plan.compression.seed, part.key, op.round));
  msg.vals = Blob{out.data(), len, nullptr};
  std::string& params = plan.wire_params[index];
  msg.lens = Blob{params.data(), params.size(), nullptr};
  msg.head.flags |= wire::kCompressed;
  // The round the seed was made for: the server checks it is at the same
  // one, since a different seed would decode other indices, silently.
  msg.head.cmd = static_cast<int32_t>(op.round & 0x7fffffff);
}

std::string PushPullClient::store_sum(Operation& op, size_t index, const ipc::Slot* slot,
                                      const KVMessage& r, bool sample) {
  if (!op.gets_values) return "";  // a broadcast's root keeps its own values
  const Partition& part = op.plan->partitions[index];
  if (op.plan->compressed()) {
    try {
      op.plan->codecs[index]->decompress_sum(
          r.vals.data, r.vals.len, op.data + part.offset,
          round_seed(op.plan->compression.seed, part.key, op.round));
    } catch (const Error& e) {
      return e.what();
    }
  } else {
    char* to = op.data + part.offset;
    const char* from = slot ? slot->data : static_cast<const char*>(r.vals.data);
    // The lend is settled here: used, or (another message took it, or
    // none was made) taken back, so nothing lands in the tensor later.
    bool lent;
    {
      std::lock_guard<std::mutex> lock(op.mu);
      lent = op.lent[index];
      op.lent[index] = false;
    }
    if (from == to) {
      metrics::registry().in_place_bytes.add(part.bytes);
    } else {
      if (lent) kv_.unlend_values(part.key);
      std::memcpy(to, from, part.bytes);
    }
  }
  CARAVAN_SAMPLE_LOG(sample) << "sample '" << op.plan->name << "' partition " << index << " pull: "
                             << sample_values(op.data + part.offset, part.bytes, op.plan->dtype);
  if (op.stored) op.stored(index);
  return "";
}

std::string PushPullClient::wrong_slot(const KVMessage& r, const ipc::Slot& slot) {
  if (!(r.head.flags & wire::kShm))
    return std::to_string(r.vals.len) + " bytes through the van, expected its shared-memory slot";
  try {
    if (ipc::decode_descriptor(r.vals.data, r.vals.len) == slot.where) return "";
  } catch (const std::exception& e) {
    return e.what();
  }
  return "another shared-memory slot than the one it was sent";
}

void PushPullClient::finish_event(Operation& op, int code, const std::string& error) {
  bool now_done = false, succeeded = false;
  {
    std::lock_guard<std::mutex> lock(op.mu);
    if (code != 0 && op.code == 0) {
      op.code = code;
      op.error = std::string(op.what()) + " of '" + op.plan->name + "' failed: " + error;
    }
    if (--op.events_left == 0) {
      now_done = true;
      succeeded = op.code == 0;
    }
  }
  if (!now_done) return;
  take_back_lends(op);
  CARAVAN_VLOG(2) << op.what() << ": '" << op.plan->name << "' done: " << op.plan->partitions.size()
                  << " partitions, first sum back after " << op.first_answer_us
                  << " us, last partition sent after " << op.last_sent_us << " us";
  if (op.traced) timeline_->end();
  if (succeeded) {
    metrics::Registry& m = metrics::registry();
    m.operations.add();
    m.operation_bytes.add(op.plan->count * dtype_size(op.plan->dtype));
    m.operation_seconds.observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - op.submitted).count());
  }
  // The tensor is free before its caller can see the operation done: one
  // that polls and at once push_pulls the same tensor again must not find
  // it still in flight (BUSY).
  {
    std::lock_guard<std::mutex> lock(mu_);
    op.plan->in_flight = false;
    --ops_in_flight_;
  }
  {
    std::lock_guard<std::mutex> lock(op.mu);
    op.done = true;
  }
  idle_cv_.notify_all();
  op.cv.notify_all();
  if (op.on_done) op.on_done();
}

int PushPullClient::poll(Operation& op, std::string* error) {
  std::lock_guard<std::mutex> lock(op.mu);
  if (!op.done) return 0;
  if (op.code != 0) {
    *error = op.error;
    return op.code;
  }
  return 1;
}

std::string PushPullClient::outstanding(const Operation& op) const {
  std::map<int, int> by_server;
  for (size_t i = 0; i < op.answered.size(); ++i)
    if (!op.answered[i]) by_server[op.plan->partitions[i].server]++;
  std::string s;
  for (auto& [rank, n] : by_server)
    s += (s.empty() ? "" : ", ") + servers_[static_cast<size_t>(rank)].name + " (" +
         std::to_string(n) + " partition" + (n == 1 ? "" : "s") + ")";
  return s;
}

int PushPullClient::wait(Operation& op, std::string* error) {
  std::unique_lock<std::mutex> lock(op.mu);
  if (!op.cv.wait_for(lock, std::chrono::seconds(op_timeout_s_), [&] { return op.done; })) {
    op.abandoned = true;
    *error = std::string(op.what()) + " of '" + op.plan->name + "' timed out after " +
             std::to_string(op_timeout_s_) + " s (CARAVAN_OP_TIMEOUT) waiting for " +
             outstanding(op) +
             (op.plan->broadcast
                  ? std::string()
                  : "; a server answers once every worker has pushed, so a worker that is "
                    "behind, stopped, or push_pulls this name with another size holds it up");
    lock.unlock();
    // The caller may free the tensor once this returns: a late answer must
    // not land in it.
    take_back_lends(op);
    return CARAVAN_ERR_TIMEOUT;
  }
  if (op.code != 0) *error = op.error;
  return op.code;
}

void PushPullClient::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!idle_cv_.wait_for(lock, std::chrono::seconds(op_timeout_s_),
                         [&] { return ops_in_flight_ == 0; }))
    throw Error(CARAVAN_ERR_TIMEOUT, std::to_string(ops_in_flight_) +
                                         " push_pull operations still in flight after " +
                                         std::to_string(op_timeout_s_) +
                                         " s (CARAVAN_OP_TIMEOUT)");
}

}  // namespace caravan
