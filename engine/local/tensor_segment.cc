#include "engine/local/tensor_segment.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/worker/partition_plan.h"

namespace caravan {

namespace {

constexpr uint64_t kTensorMagic = 0x3152534e544e5643ull;  // "CVNTNSR1"
constexpr uint32_t kLayoutVersion = 3;  // 2: a root per local rank; 3: device handles
constexpr size_t kHandleBytes = 128;    // CARAVAN_REDUCER_MAX_IPC_HANDLE_V1
constexpr size_t kMessageBytes = 1024;
constexpr size_t kSlotAlign = 64;  // a cache line: vector sums run at full speed

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void copy_message(char* dst, const std::string& text) {
  size_t n = std::min(text.size(), kMessageBytes - 1);
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

}  // namespace

// A local rank's device buffer and event for the tensor, as IPC handles
// (device tensors summed on the device).
struct DeviceHandles {
  std::atomic<uint32_t> written;  // 1 once the handles below are
  uint32_t memory_bytes;
  uint32_t event_bytes;
  uint32_t unused;
  char memory[kHandleBytes];
  char event[kHandleBytes];
};

struct TensorBlock {
  uint64_t magic;
  uint32_t layout_version;
  uint32_t local_size;
  uint64_t nonce;   // the group's: the name carries it too
  ProcessId owner;  // the group's maker, for sweeping leftovers of dead runs
  uint64_t count;
  int32_t dtype;
  int32_t creator_rank;
  uint64_t name_bytes;
  uint64_t slot_stride;
  uint64_t slots_offset;
  std::atomic<uint32_t> mapped;   // local ranks that mapped it; the last removes its name
  std::atomic<uint32_t> refusal;  // 0, 1 message being written, 2 refused
  std::atomic<int32_t> refusal_code;
  std::atomic<int32_t> result_code;
  std::atomic<uint64_t> results;
  char refusal_message[kMessageBytes];
  char result_message[kMessageBytes];

  std::atomic<uint64_t>* contributed() {
    return reinterpret_cast<std::atomic<uint64_t>*>(this + 1);
  }
  // Per local rank: the root of the broadcast it contributed last, or -1
  // for a push_pull.
  std::atomic<int32_t>* roots() {
    return reinterpret_cast<std::atomic<int32_t>*>(contributed() + local_size);
  }
  DeviceHandles* handles() {
    return reinterpret_cast<DeviceHandles*>(reinterpret_cast<char*>(this) +
                                            handles_offset(local_size));
  }
  char* name() { return reinterpret_cast<char*>(handles() + local_size); }
  static size_t handles_offset(uint32_t size) {
    size_t end = sizeof(TensorBlock) + size * sizeof(std::atomic<uint64_t>) +
                 size * sizeof(std::atomic<int32_t>);
    return align_up(end, alignof(DeviceHandles));
  }
};

static_assert(sizeof(TensorBlock) % alignof(std::atomic<uint64_t>) == 0,
              "counters must be aligned");

TensorSegment::TensorSegment(const LocalGroup& group, const std::string& name, size_t count,
                             int dtype)
    : group_(group), bytes_(count * dtype_size(dtype)), segment_name_(group.tensor_prefix() + [&] {
        char h[17];
        std::snprintf(h, sizeof h, "%016llx", static_cast<unsigned long long>(name_hash(name)));
        return std::string(h);
      }()) {
  const int size = group.local_size();
  for (;;) {
    if (auto seg = SharedSegment::open(segment_name_)) {
      segment_ = std::move(*seg);
      break;
    }
    size_t header = TensorBlock::handles_offset(static_cast<uint32_t>(size)) +
                    size * sizeof(DeviceHandles) + name.size() + 1;
    size_t offset = align_up(header, kSlotAlign);
    size_t stride = align_up(bytes_, kSlotAlign);
    SharedSegment fresh =
        SharedSegment::create(offset + stride * static_cast<size_t>(size),
                              "tensor '" + name + "' of machine " + group.machine());
    auto* b = new (fresh.data()) TensorBlock();
    b->magic = kTensorMagic;
    b->layout_version = kLayoutVersion;
    b->local_size = static_cast<uint32_t>(size);
    b->nonce = group.nonce();
    b->owner = group.owner();
    b->count = count;
    b->dtype = dtype;
    b->creator_rank = group.local_rank();
    b->name_bytes = name.size();
    b->slot_stride = stride;
    b->slots_offset = offset;
    for (int r = 0; r < size; ++r) new (&b->contributed()[r]) std::atomic<uint64_t>(0);
    for (int r = 0; r < size; ++r) new (&b->roots()[r]) std::atomic<int32_t>(-1);
    for (int r = 0; r < size; ++r) new (&b->handles()[r]) DeviceHandles();
    std::memcpy(b->name(), name.data(), name.size());
    if (fresh.publish(segment_name_)) {
      segment_ = std::move(fresh);
      break;
    }
    // Another local rank published it first: map theirs on the next pass.
  }
  TensorBlock* b = block();
  if (segment_.size() < sizeof(TensorBlock) || b->magic != kTensorMagic ||
      b->layout_version != kLayoutVersion || b->nonce != group.nonce() ||
      b->local_size != static_cast<uint32_t>(size) ||
      b->slots_offset + b->slot_stride * static_cast<size_t>(size) > segment_.size())
    throw Error(CARAVAN_ERR_INTERNAL,
                segment_path(segment_name_) + " is not a tensor segment of this run");
  // A run that aborted after its sweep of names must not leave this one.
  try {
    group.check();
  } catch (const Error&) {
    segment_.unlink_if_mine(segment_name_);
    throw;
  }
  if (b->mapped.fetch_add(1) + 1 == static_cast<uint32_t>(size))
    segment_.unlink_if_mine(segment_name_);
  std::string stored(b->name(), b->name_bytes);
  if (stored != name)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor names '" + stored + "' and '" + name +
                                          "' hash to the same key; rename one of them");
  if (b->count != count || b->dtype != dtype) {
    std::string msg = "local ranks of machine " + group.machine() + " push_pull tensor '" + name +
                      "' with different sizes or dtypes: " + group.who(group.local_rank()) +
                      " with " + std::to_string(count) + " " + dtype_name(dtype) + ", " +
                      group.who(b->creator_rank) + " with " + std::to_string(b->count) + " " +
                      dtype_name(b->dtype);
    refuse(CARAVAN_ERR_MISMATCH, msg);
    throw Error(CARAVAN_ERR_MISMATCH, msg);
  }
}

TensorBlock* TensorSegment::block() const {
  return reinterpret_cast<TensorBlock*>(segment_.data());
}

char* TensorSegment::slot(int r) const {
  TensorBlock* b = block();
  return segment_.data() + b->slots_offset + b->slot_stride * static_cast<size_t>(r);
}

uint64_t TensorSegment::contributed(int r) const {
  return block()->contributed()[r].load(std::memory_order_acquire);
}

int TensorSegment::root_of(int r) const {
  return block()->roots()[r].load(std::memory_order_relaxed);
}

void TensorSegment::contribute(int r, uint64_t rounds, int root) {
  // Relaxed, then released with the round: whoever acquires the round
  // sees the root too.
  block()->roots()[r].store(root, std::memory_order_relaxed);
  block()->contributed()[r].store(rounds, std::memory_order_release);
  group_.doorbell().ring();
}

void TensorSegment::set_device_handles(int r, const std::string& memory, const std::string& event) {
  DeviceHandles& h = block()->handles()[r];
  if (memory.size() > kHandleBytes || event.size() > kHandleBytes)
    throw Error(CARAVAN_ERR_INTERNAL,
                "an IPC handle of " + std::to_string(std::max(memory.size(), event.size())) +
                    " bytes does not fit the tensor segment's " + std::to_string(kHandleBytes));
  std::memcpy(h.memory, memory.data(), memory.size());
  std::memcpy(h.event, event.data(), event.size());
  h.memory_bytes = static_cast<uint32_t>(memory.size());
  h.event_bytes = static_cast<uint32_t>(event.size());
  h.written.store(1, std::memory_order_release);
  group_.doorbell().ring();
}

bool TensorSegment::device_handles(int r, std::string* memory, std::string* event) const {
  const DeviceHandles& h = block()->handles()[r];
  if (h.written.load(std::memory_order_acquire) != 1) return false;
  memory->assign(h.memory, h.memory_bytes);
  event->assign(h.event, h.event_bytes);
  return true;
}

uint64_t TensorSegment::results() const { return block()->results.load(std::memory_order_acquire); }

int TensorSegment::result(std::string* error) const {
  TensorBlock* b = block();
  int code = b->result_code.load(std::memory_order_relaxed);
  if (code != 0) *error = b->result_message;
  return code;
}

void TensorSegment::publish_result(uint64_t rounds, int code, const std::string& error) {
  TensorBlock* b = block();
  b->result_code.store(code, std::memory_order_relaxed);
  if (code != 0) copy_message(b->result_message, error);
  b->results.store(rounds, std::memory_order_release);
  group_.doorbell().ring();
}

bool TensorSegment::refused(int* code, std::string* message) const {
  TensorBlock* b = block();
  if (b->refusal.load(std::memory_order_acquire) != 2) return false;
  *code = b->refusal_code.load();
  *message = b->refusal_message;
  return true;
}

void TensorSegment::refuse(int code, const std::string& message) {
  TensorBlock* b = block();
  uint32_t expected = 0;
  if (b->refusal.compare_exchange_strong(expected, 1)) {
    b->refusal_code.store(code);
    copy_message(b->refusal_message, message);
    b->refusal.store(2, std::memory_order_release);
  }
  group_.doorbell().ring();
}

void remove_dead_runs_segments(const LocalGroup& group) {
  for (const std::string& name : segments_named(group.control_name() + "-")) {
    if (name.compare(0, group.tensor_prefix().size(), group.tensor_prefix()) == 0) continue;
    auto seg = SharedSegment::open(name);
    if (!seg || seg->size() < sizeof(TensorBlock)) continue;
    auto* b = reinterpret_cast<TensorBlock*>(seg->data());
    if (b->magic != kTensorMagic || b->owner.alive()) continue;
    CARAVAN_LOG(INFO) << "removing " << segment_path(name) << ", left by an earlier run (pid "
                      << b->owner.pid << ")";
    seg->unlink_if_mine(name);
  }
}

}  // namespace caravan
