#include "engine/ipc/worker_lane.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <random>

#include "engine/base/error.h"
#include "engine/base/log.h"

namespace caravan::ipc {
namespace {

constexpr size_t kSlotAlign = 64;  // a cache line: sums never share one across slots
constexpr size_t kPage = 4096;
// Segments grow geometrically from here, so a model of many tensors needs
// a handful of segments (and attach round trips), not one per tensor.
constexpr size_t kMinSegmentBytes = 8u << 20;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

uint64_t random_nonce() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

struct AttachAnswer {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int code = 0;
  std::string why;
};

}  // namespace

WorkerLane::WorkerLane(KVEndpoint& kv, int server, std::string server_name, std::string name_prefix,
                       int timeout_s)
    : kv_(kv),
      server_(server),
      server_name_(std::move(server_name)),
      name_prefix_(std::move(name_prefix)),
      timeout_s_(timeout_s) {}

std::vector<Slot> WorkerLane::place(const std::vector<size_t>& bytes, const std::string& tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  if (refused_ || bytes.empty()) return {};
  size_t need = 0;
  for (size_t b : bytes) need += round_up(b, kSlotAlign);
  size_t index = 0;
  while (index < segments_.size() && segments_[index].memory->size() - segments_[index].used < need)
    ++index;
  if (index == segments_.size()) {
    SegmentIdentity id;
    id.name = name_prefix_ + std::to_string(index);
    id.bytes = kSegmentHeaderBytes + round_up(std::max({need, kMinSegmentBytes, capacity_}), kPage);
    id.nonce = random_nonce();
    std::shared_ptr<MappedSegment> memory;
    try {
      memory = MappedSegment::create(id);
    } catch (const Error& e) {
      CARAVAN_LOG(WARNING) << "tensor '" << tensor << "': no shared memory for " << server_name_
                           << " (" << e.what()
                           << "); its values for that server go through the van";
      return {};
    }
    bool mapped = attach(id, index);
    // The server removed the name when it mapped the segment; this covers
    // a server that could not.
    memory->unlink_name();
    if (!mapped) return {};
    capacity_ += memory->size();
    segments_.push_back(Segment{std::move(memory), kSegmentHeaderBytes});
  }
  Segment& seg = segments_[index];
  std::vector<Slot> slots;
  for (size_t b : bytes) {
    Slot s;
    s.where = SlotDescriptor{index, seg.used, b};
    s.data = seg.memory->base() + seg.used;
    seg.used += round_up(b, kSlotAlign);
    slots.push_back(s);
  }
  return slots;
}

bool WorkerLane::attach(const SegmentIdentity& segment, size_t index) {
  AttachRequest request;
  request.index = index;
  request.segment = segment;
  auto body = std::make_shared<std::vector<uint8_t>>(encode_attach(request));
  KVMessage msg;
  msg.head.flags = wire::kShm;
  msg.vals = Blob{body->data(), body->size(), body};
  auto answer = std::make_shared<AttachAnswer>();
  kv_.request(
      server_, std::move(msg),
      [answer](KVMessage&& r) {
        std::lock_guard<std::mutex> lock(answer->mu);
        answer->done = true;
        answer->code = r.head.status;
        if (r.is_error()) answer->why = r.error_text();
        answer->cv.notify_all();
      },
      nullptr);
  std::unique_lock<std::mutex> lock(answer->mu);
  if (!answer->cv.wait_for(lock, std::chrono::seconds(timeout_s_), [&] { return answer->done; }))
    throw Error(CARAVAN_ERR_TIMEOUT, "no answer from " + server_name_ +
                                         " to mapping shared-memory segment " + segment.name +
                                         " after " + std::to_string(timeout_s_) +
                                         " s (CARAVAN_OP_TIMEOUT)");
  if (answer->code == CARAVAN_ERR_PEER_LOST || answer->code == CARAVAN_ERR_TRANSPORT)
    throw Error(answer->code, answer->why);
  if (answer->code < 0) {
    refused_ = true;
    CARAVAN_LOG(INFO) << server_name_ << " cannot map this worker's shared memory (" << answer->why
                      << "): values for it go through the van";
    return false;
  }
  if (index == 0)
    CARAVAN_LOG(INFO) << "values for " << server_name_ << " go through shared memory ("
                      << segment.bytes << "-byte segment " << segment.name << " mapped)";
  else
    CARAVAN_VLOG(1) << server_name_ << " mapped shared-memory segment " << index << " ("
                    << segment.bytes << " bytes)";
  return true;
}

}  // namespace caravan::ipc
