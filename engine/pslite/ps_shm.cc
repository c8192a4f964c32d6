#include "engine/pslite/ps_shm.h"

#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/ipc/messages.h"
#include "engine/ipc/segment_names.h"
#include "ps/internal/postoffice.h"

namespace caravan::psl {

ShmSender::ShmSender(KVEndpoint& kv, const JobConfig& config, const NodeInfo& self,
                     const std::vector<NodeInfo>& table) {
  for (const NodeInfo& n : table) {
    if (n.role != Role::kServer || n.host != self.host) continue;
    std::string names = ipc::lane_prefix(config.root_uri, config.root_port, n.id, self.id);
    lanes_[n.id].lane =
        std::make_unique<ipc::WorkerLane>(kv, n.id, n.describe(), names, config.op_timeout_s);
  }
}

std::optional<ipc::Slot> ShmSender::take(int server, int customer, int timestamp, uint64_t key,
                                         bool pull, const void* values, size_t bytes,
                                         const ps::SArray<char>& keys) {
  std::unique_lock<std::mutex> lock(mu_);
  auto lane = lanes_.find(server);
  if (lane == lanes_.end() || bytes == 0) return std::nullopt;
  auto& slots = lane->second.slots[std::make_pair(key, pull)];
  std::shared_ptr<SlotState> state;
  for (auto& s : slots)
    if (!s->busy && s->slot.where.length >= bytes) {
      state = s;
      break;
    }
  if (!state) {
    if (slots.size() >= kSlotsPerKey) return std::nullopt;
    // place() may ask the server to map a new segment: not under mu_,
    // which answers route through. The lane serializes its own callers.
    ipc::WorkerLane* l = lane->second.lane.get();
    lock.unlock();
    std::vector<ipc::Slot> placed = l->place({bytes}, "key " + std::to_string(key));
    lock.lock();
    if (placed.empty()) return std::nullopt;
    state = std::make_shared<SlotState>();
    state->slot = placed[0];
    lanes_[server].slots[std::make_pair(key, pull)].push_back(state);
  }
  state->busy = true;
  pending_[std::make_tuple(server, customer, timestamp)] = Pending{state, pull, keys};
  ipc::Slot s = state->slot;
  s.where.length = bytes;
  if (!pull) std::memcpy(s.data, values, bytes);
  return s;
}

std::optional<ShmSender::Answer> ShmSender::answered(int server, int customer, int timestamp,
                                                     const void* descriptor,
                                                     size_t descriptor_len) {
  Pending p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(std::make_tuple(server, customer, timestamp));
    if (it == pending_.end()) return std::nullopt;
    p = std::move(it->second);
    pending_.erase(it);
  }
  Answer a;
  a.pull = p.pull;
  a.keys = p.keys;
  std::shared_ptr<SlotState> state = p.state;
  auto release = [state](char*) { state->busy = false; };
  if (!p.pull || !descriptor) {
    // A push's slot is free once the server answered (it read the values
    // first); a pull answered through the van never used its slot.
    release(nullptr);
    return a;
  }
  ipc::SlotDescriptor d = ipc::decode_descriptor(descriptor, descriptor_len);
  if (d.offset != state->slot.where.offset || d.segment != state->slot.where.segment ||
      d.length > state->slot.where.length) {
    release(nullptr);
    CARAVAN_LOG(ERROR) << "ps: server node " << server << " answered pull " << timestamp
                       << " into memory that is not its slot; the answer is dropped";
    return a;
  }
  // Held until the application let go of the values (its pull callback
  // copied them out): only then may the next pull of this key use it.
  a.vals.reset(state->slot.data, d.length, release);
  return a;
}

bool ShmReceiver::attach(const KVMessage& req, std::string* why) {
  try {
    ipc::AttachRequest a = ipc::decode_attach(req.vals.data, req.vals.len);
    std::lock_guard<std::mutex> lock(mu_);
    segments_.attach(ps::Postoffice::IDtoRank(req.head.sender), a);
    CARAVAN_LOG(INFO) << "ps: mapped shared-memory segment " << a.index << " (" << a.segment.bytes
                      << " bytes) of worker node " << req.head.sender << " and removed its name "
                      << a.segment.name;
    return true;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

Blob ShmReceiver::values(int worker, const Blob& descriptor) {
  ipc::SlotDescriptor d = ipc::decode_descriptor(descriptor.data, descriptor.len);
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.resolve(ps::Postoffice::IDtoRank(worker), d);
}

void ShmReceiver::expect_answer(int worker, int customer, int timestamp, const Blob& descriptor) {
  ipc::SlotDescriptor d = ipc::decode_descriptor(descriptor.data, descriptor.len);
  std::lock_guard<std::mutex> lock(mu_);
  Blob memory = segments_.resolve(ps::Postoffice::IDtoRank(worker), d);
  expected_[std::make_tuple(worker, customer, timestamp)] = Expected{d, memory};
}

std::optional<std::vector<uint8_t>> ShmReceiver::answer(int worker, int customer, int timestamp,
                                                        const void* data, size_t len) {
  Expected e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = expected_.find(std::make_tuple(worker, customer, timestamp));
    if (it == expected_.end()) return std::nullopt;
    e = std::move(it->second);
    expected_.erase(it);
  }
  // Too large: the worker's pull destination is smaller than the answer;
  // through the van, its own checks say so.
  if (len > e.where.length) return std::nullopt;
  if (len) std::memcpy(e.memory.data, data, len);
  ipc::SlotDescriptor written = e.where;
  written.length = len;
  return ipc::encode_descriptor(written);
}

}  // namespace caravan::psl
