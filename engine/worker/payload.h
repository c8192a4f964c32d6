// How a tensor's partitions travel, chosen once when the tensor is
// declared (PushPullClient::declare):
//   - make_values_payload: its values as they are: a push reads the
//     caller's tensor, an answer is copied into it or received there;
//   - make_slot_payload (BYTEPS_ENABLE_IPC): partitions bound for a server
//     on this host through a shared-memory slot of theirs, the rest as
//     values;
//   - make_compressed_payload (byteps_compressor_type): compressed by each
//     partition's codec, the sum decompressed into the tensor.
// The client sends, receives and times out the same way for each; only
// what a message carries and how an answer lands differ.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/compress/compression_spec.h"
#include "engine/ipc/worker_lane.h"
#include "engine/kv/kv_message.h"

namespace caravan {

class Operation;
struct TensorPlan;

class Payload {
 public:
  virtual ~Payload() = default;
  // What the first push needs ready (a shared-memory slot), made once; may
  // wait for a server's answer, so called outside every lock. Throws
  // caravan::Error.
  virtual void prepare() {}
  // The push's values of partition `index` (msg.vals, and the flags, lens
  // and cmd they need). Throws caravan::Error.
  virtual void fill(const Operation& op, size_t index, KVMessage& push) = 0;
  // Whether the answer may be received straight into the tensor (a van
  // lend, van_v2.h): large enough that the lend costs less than a copy.
  virtual bool lendable(const Operation& op, size_t index) const;
  // Why `answer` cannot be partition `index`'s ("" when it can).
  virtual std::string check(const Operation& op, size_t index, const KVMessage& answer) const;
  // Writes the answer's values into the tensor (nothing for a broadcast's
  // root). Throws caravan::Error when it cannot.
  virtual void store(const Operation& op, size_t index, const KVMessage& answer) = 0;
  // Says in the log how partition `index` goes ("through the van", ...).
  virtual const char* route(size_t index) const { return "through the van"; }
};

std::unique_ptr<Payload> make_values_payload();
// `lanes`: by server rank, null where the server is on another host; they
// outlive the payload.
std::unique_ptr<Payload> make_slot_payload(const TensorPlan& plan,
                                           const std::vector<ipc::WorkerLane*>& lanes);
std::unique_ptr<Payload> make_compressed_payload(const TensorPlan& plan,
                                                 const CompressionSpec& spec,
                                                 const std::string& plugin_path);

// Answers at least this large are received into the tensor itself where
// the van can (van_v2.h, lend); below it a copy costs less than the lend.
constexpr size_t kLendBytes = 64 * 1024;

}  // namespace caravan
