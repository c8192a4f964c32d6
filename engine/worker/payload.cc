#include "engine/worker/payload.h"

#include <cstring>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/metrics.h"
#include "engine/compress/codec.h"
#include "engine/ipc/messages.h"
#include "engine/wire/header.h"
#include "engine/worker/operation.h"
#include "engine/worker/tensor_plan.h"

namespace caravan {

bool Payload::lendable(const Operation& op, size_t index) const {
  return op.gets_values(index) && op.partition(index).bytes >= kLendBytes;
}

std::string Payload::check(const Operation& op, size_t index, const KVMessage& answer) const {
  if (answer.head.flags & wire::kCompressed) return "compressed values to an uncompressed push";
  // A broadcast's root gets no values back, nor does a reduce-scatter's
  // worker for another's shard; everyone else the partition.
  size_t expected = op.gets_values(index) ? op.partition(index).bytes : 0;
  if (answer.vals.len == expected) return "";
  const int source = op.source_of(index);
  return std::to_string(answer.vals.len) + " bytes, expected " + std::to_string(expected) +
         (source == kSum ? ""
                         : " (the " + std::string(op.what()) + "'s source of it, worker " +
                               std::to_string(source) + ", has another count or dtype for it)");
}

namespace {

class ValuesPayload : public Payload {
 public:
  void fill(const Operation& op, size_t index, KVMessage& push) override {
    const Partition& part = op.partition(index);
    if (op.sends_values(index)) push.vals = Blob{op.at(index), part.bytes, nullptr};
  }

  void store(const Operation& op, size_t index, const KVMessage& answer) override {
    if (!op.gets_values(index)) return;  // e.g. a broadcast's root keeps its own values
    const Partition& part = op.partition(index);
    char* to = op.at(index);
    if (answer.vals.data == to) {
      metrics::registry().in_place_bytes.add(part.bytes);  // the van was lent the place
      return;
    }
    std::memcpy(to, answer.vals.data, part.bytes);
  }
};

// A partition bound for a server on this host goes through its slot: the
// worker copies its values in, the server sums in place and answers with
// the slot's place. The others go as values.
class SlotPayload final : public ValuesPayload {
 public:
  SlotPayload(const TensorPlan& plan, std::vector<ipc::WorkerLane*> lanes)
      : plan_(plan), lanes_(std::move(lanes)) {}

  void prepare() override {
    if (placed_) return;
    std::vector<ipc::Slot> slots(plan_.partitions.size());
    for (size_t server = 0; server < lanes_.size(); ++server) {
      if (!lanes_[server]) continue;
      std::vector<size_t> indices, bytes;
      for (size_t i = 0; i < plan_.partitions.size(); ++i) {
        if (static_cast<size_t>(plan_.partitions[i].server) != server) continue;
        indices.push_back(i);
        bytes.push_back(plan_.partitions[i].bytes);
      }
      std::vector<ipc::Slot> placed = lanes_[server]->place(bytes, plan_.name);
      for (size_t j = 0; j < placed.size(); ++j) slots[indices[j]] = placed[j];
    }
    slots_ = std::move(slots);
    placed_ = true;
  }

  void fill(const Operation& op, size_t index, KVMessage& push) override {
    const ipc::Slot* slot = slot_of(index);
    if (!slot) return ValuesPayload::fill(op, index, push);
    const Partition& part = op.partition(index);
    std::memcpy(slot->data, op.at(index), part.bytes);
    auto where = std::make_shared<std::vector<uint8_t>>(ipc::encode_descriptor(slot->where));
    push.vals = Blob{where->data(), where->size(), where};
    push.head.flags |= wire::kShm;
  }

  bool lendable(const Operation& op, size_t index) const override {
    return !slot_of(index) && ValuesPayload::lendable(op, index);
  }

  std::string check(const Operation& op, size_t index, const KVMessage& answer) const override {
    const ipc::Slot* slot = slot_of(index);
    if (!slot) return ValuesPayload::check(op, index, answer);
    if (!(answer.head.flags & wire::kShm))
      return std::to_string(answer.vals.len) +
             " bytes through the van, expected its shared-memory slot";
    if (answer.head.flags & wire::kCompressed) return "compressed values to an uncompressed push";
    try {
      if (!(ipc::decode_descriptor(answer.vals.data, answer.vals.len) == slot->where))
        return "another shared-memory slot than the one it was sent";
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  void store(const Operation& op, size_t index, const KVMessage& answer) override {
    const ipc::Slot* slot = slot_of(index);
    if (!slot) return ValuesPayload::store(op, index, answer);
    const Partition& part = op.partition(index);
    std::memcpy(op.at(index), slot->data, part.bytes);
  }

  const char* route(size_t index) const override {
    return slot_of(index) ? "through shared memory" : "through the van";
  }

 private:
  const ipc::Slot* slot_of(size_t index) const {
    if (slots_.empty() || !slots_[index].data) return nullptr;
    return &slots_[index];
  }

  const TensorPlan& plan_;
  const std::vector<ipc::WorkerLane*> lanes_;
  bool placed_ = false;  // prepare() runs before the first push, one op at a time
  std::vector<ipc::Slot> slots_;
};

// Each partition has its codec (with its error feedback and momentum), the
// buffer its compressed push goes out from, and the parameters that
// travel with it for the server to decode by.
class CompressedPayload final : public Payload {
 public:
  CompressedPayload(const TensorPlan& plan, const CompressionSpec& spec,
                    const std::string& plugin_path)
      : seed_(spec.seed) {
    const size_t esize = dtype_size(plan.dtype);
    for (size_t i = 0; i < plan.partitions.size(); ++i) {
      size_t count = plan.partitions[i].bytes / esize;
      codecs_.push_back(std::make_unique<PushCodec>(
          spec, static_cast<caravan_dtype>(plan.dtype), count, plugin_path,
          "tensor '" + plan.name + "' partition " + std::to_string(i)));
      buffers_.emplace_back(codecs_.back()->max_bytes());
      std::string text = spec.text() + "count=" + std::to_string(count) + "\n";
      text.resize((text.size() + 3) / 4 * 4, '\0');
      params_.push_back(std::move(text));
    }
  }

  void fill(const Operation& op, size_t index, KVMessage& push) override {
    const Partition& part = op.partition(index);
    std::vector<char>& out = buffers_[index];
    size_t len =
        codecs_[index]->compress(op.at(index), out.data(), round_seed(seed_, part.key, op.round()));
    push.vals = Blob{out.data(), len, nullptr};
    push.lens = Blob{params_[index].data(), params_[index].size(), nullptr};
    push.head.flags |= wire::kCompressed;
    // The round the seed was made for: the server checks it is at the same
    // one, since a different seed would decode other indices, silently.
    push.head.cmd = static_cast<int32_t>(op.round() & 0x7fffffff);
  }

  bool lendable(const Operation&, size_t) const override { return false; }

  std::string check(const Operation&, size_t, const KVMessage& answer) const override {
    if (!(answer.head.flags & wire::kCompressed)) return "uncompressed values to a compressed push";
    return "";
  }

  void store(const Operation& op, size_t index, const KVMessage& answer) override {
    const Partition& part = op.partition(index);
    codecs_[index]->decompress_sum(answer.vals.data, answer.vals.len, op.at(index),
                                   round_seed(seed_, part.key, op.round()));
  }

 private:
  const uint64_t seed_;
  std::vector<std::unique_ptr<PushCodec>> codecs_;
  std::vector<std::vector<char>> buffers_;
  std::vector<std::string> params_;
};

}  // namespace

std::unique_ptr<Payload> make_values_payload() { return std::make_unique<ValuesPayload>(); }

std::unique_ptr<Payload> make_slot_payload(const TensorPlan& plan,
                                           const std::vector<ipc::WorkerLane*>& lanes) {
  return std::make_unique<SlotPayload>(plan, lanes);
}

std::unique_ptr<Payload> make_compressed_payload(const TensorPlan& plan,
                                                 const CompressionSpec& spec,
                                                 const std::string& plugin_path) {
  return std::make_unique<CompressedPayload>(plan, spec, plugin_path);
}

}  // namespace caravan
