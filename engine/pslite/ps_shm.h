// ps-lite values through shared memory between a worker node and a server
// node on one host (BYTEPS_ENABLE_IPC), on the engine's IPC lanes
// (engine/ipc): the worker copies a push's values into its slot for that
// key and sends the slot's descriptor; a pull names the slot the server
// writes its answer into. As on bytedance/ps-lite's IPC path, only
// one-key requests travel this way, and a pull's answer is the values of
// the key asked (the server's keys stay home). Everything else, and every
// slot still in use by an earlier request, goes through the van.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/base/config.h"
#include "engine/control/node_info.h"
#include "engine/ipc/segment_table.h"
#include "engine/ipc/worker_lane.h"
#include "engine/kv/kv_endpoint.h"
#include "ps/sarray.h"

namespace caravan::psl {

// A worker node's lanes to the servers on its host.
class ShmSender {
 public:
  ShmSender(KVEndpoint& kv, const JobConfig& config, const NodeInfo& self,
            const std::vector<NodeInfo>& table);

  // The slot for request (customer, timestamp) of key `key` to `server`:
  // a push's `bytes` of values copied in, or room for a pull's answer;
  // remembers what the answer will need. Empty when this request goes
  // through the van.
  std::optional<ipc::Slot> take(int server, int customer, int timestamp, uint64_t key, bool pull,
                                const void* values, size_t bytes, const ps::SArray<char>& keys);

  struct Answer {
    bool pull = false;
    ps::SArray<char> keys;  // the request's
    ps::SArray<char> vals;  // a view of the slot; frees it when let go
  };
  // The answer to a request that went through shared memory, or nothing.
  // `descriptor`: what the server wrote (kShm answers), else null.
  std::optional<Answer> answered(int server, int customer, int timestamp, const void* descriptor,
                                 size_t descriptor_len);

 private:
  struct SlotState {
    ipc::Slot slot;
    // Set by take() under mu_; cleared by an answer, or by the last view
    // of a pull's answer the application let go of.
    std::atomic<bool> busy{false};
  };
  struct Lane {
    std::unique_ptr<ipc::WorkerLane> lane;
    // (key, pull) -> its slots: another one when every one is in use,
    // up to kSlotsPerKey; past that the request goes through the van.
    std::map<std::pair<uint64_t, bool>, std::vector<std::shared_ptr<SlotState>>> slots;
  };
  static constexpr size_t kSlotsPerKey = 4;
  struct Pending {
    std::shared_ptr<SlotState> state;
    bool pull;
    ps::SArray<char> keys;
  };

  std::mutex mu_;
  std::map<int, Lane> lanes_;                             // servers on this host
  std::map<std::tuple<int, int, int>, Pending> pending_;  // (server, customer, timestamp)
};

// A server node's side: the workers' segments it mapped, and where the
// answers to their pulls go.
class ShmReceiver {
 public:
  explicit ShmReceiver(int num_workers) : segments_(num_workers) {}

  // An attach request (kShm without push or pull): maps the segment, or
  // says why not.
  bool attach(const KVMessage& req, std::string* why);
  // The memory a push's descriptor names. Throws caravan::Error.
  Blob values(int worker, const Blob& descriptor);
  // A pull through shared memory: remembers where its answer goes.
  void expect_answer(int worker, int customer, int timestamp, const Blob& descriptor);
  // Writes an answer of `len` bytes into the slot of (worker, customer,
  // timestamp) and returns the descriptor of what it wrote; nothing when
  // that pull did not come through shared memory or the answer is larger
  // than its slot (the answer then goes through the van).
  std::optional<std::vector<uint8_t>> answer(int worker, int customer, int timestamp,
                                             const void* data, size_t len);

 private:
  std::mutex mu_;
  ipc::SegmentTable segments_;
  struct Expected {
    ipc::SlotDescriptor where;
    Blob memory;
  };
  std::map<std::tuple<int, int, int>, Expected> expected_;
};

}  // namespace caravan::psl
