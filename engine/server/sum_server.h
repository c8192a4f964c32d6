// BytePS-style summation on top of the KV layer, and the relay of
// broadcasts. In the default
// (synchronous) mode every worker pushes a key once per round; when all
// pushes of the round are in, each worker gets the sum back as the answer
// to its own request. In asynchronous mode (BYTEPS_ENABLE_ASYNC) every push
// is added into the key's store at once and answered with the store as it
// is then.
//
// Sums run on BYTEPS_SERVER_ENGINE_THREAD summation threads. Each key
// belongs to one thread, chosen when the key is first seen as the thread
// with the fewest bytes of keys so far, so a key's state is only ever
// touched by its thread and large keys spread evenly. With BYTEPS_SERVER_ENABLE_SCHEDULE a
// thread serves the queued key with the fewest finished rounds first.
//
// In synchronous mode each round sums into a buffer of its own (the round's
// first push, kept without copying), released only when the van has sent
// the last answer from it: a fast worker's next round can never overwrite a
// sum a slow worker has not received.
//
// A broadcast key is never summed: each round the root's values are kept
// (without copying) until every worker has asked, then the others get
// them and the root an empty answer, in either mode. A key is either summed
// or relayed, for good.
//
// With BYTEPS_ENABLE_IPC, a worker on this host may put its values in a
// shared-memory slot of its own and send only the slot's place (wire flag
// kShm). Such a push is summed straight from the slot, and its answer is
// the sum written back into the same slot. When the round's first push is
// such a slot, that slot is the accumulator: its worker waits for the
// answer and does not touch it before.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/base/config.h"
#include "engine/base/timeline.h"
#include "engine/compress/codec.h"
#include "engine/ipc/segment_table.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/reducer/reducer.h"
#include "engine/server/push_pull_request.h"

namespace caravan {

class SumServer {
 public:
  // Reads num_workers, server_sum_threads, server_enable_schedule,
  // enable_async and enable_ipc from `config`; starts the summation threads.
  SumServer(KVEndpoint& kv, Reducer& reducer, const JobConfig& config);
  ~SumServer();
  // Checks one request and queues it for its key's summation thread; runs on
  // the KV receive thread.
  void handle(KVMessage&& request);
  // Stops the summation threads and drops rounds in progress (shutdown or job
  // failure). Idempotent.
  void clear();

 private:
  // Where a push's values lie and its answer goes: a worker's
  // shared-memory slot, or (place empty) the van.
  struct Source {
    std::optional<ipc::SlotDescriptor> place;
    Blob slot;  // the slot's memory, when there is a place
  };
  struct Waiter {
    wire::Header head;
    Source source;
  };
  struct Round {
    Blob sum;  // the accumulator (broadcast: the root's values), alive until every answer was sent
    int root = -1;  // broadcast
    std::vector<Waiter> waiting;
    std::vector<bool> pushed;  // by worker rank
    bool traced = false;  // a step the timeline keeps (BYTEPS_TRACE_ON)
  };
  enum class Use { kUnknown, kSum, kBroadcast };
  struct KeyState {
    Use use = Use::kUnknown;
    size_t bytes = 0;
    int dtype = -1;
    uint64_t rounds = 0;  // finished rounds (async: pushes added)
    Round round;
    Blob store;  // async mode: the running sum
    // Set when workers disagree on the key's size or dtype: every push of
    // it is refused from then on, so no worker gets a wrong sum.
    std::string poisoned;
    // A compressed key: its parameters as the first push gave them, the
    // seed they name, and the codec that sums and compresses its rounds.
    std::string compression;
    uint64_t seed = 0;
    std::unique_ptr<SumCodec> codec;
  };
  struct Queued {
    KVMessage request;  // vals: the values, wherever they lie
    PushPullRequest checked;  // what handle() found, so no one parses it again
    uint64_t sequence;
    Source source;
    int64_t arrived_us = 0;  // for the timeline, when tracing
  };
  // One of the threads that sum (BytePS calls them engine threads), with
  // the requests queued for it and the keys it owns.
  struct SumThread {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Queued> queue;
    bool stop = false;
    // A request is being processed, by this thread or inline by the
    // receiving thread (handle()); whoever set it owns `keys` until it is
    // cleared, under mu.
    bool busy = false;
    uint64_t bytes = 0;  // of the keys it owns; read by the receive thread only
    std::unordered_map<uint64_t, KeyState> keys;  // whoever holds busy
    std::thread thread;
  };

  // A round the timeline keeps (`round` >= 0, its sum complete at
  // `complete_us`): the answer's send becomes an event.
  struct TracedRound {
    int64_t round;  // -1: not traced
    int64_t complete_us;
  };
  static constexpr TracedRound kUntraced{-1, 0};

  void run(SumThread& t);
  Queued take(SumThread& t);  // t.mu held, queue not empty
  // Maps the segment an attach request announces and answers it.
  void attach(const KVMessage& request, int rank);
  void process(SumThread& t, Queued&& q);
  // process(), its failure logged; the caller holds t.busy.
  void run_one(SumThread& t, Queued&& q);
  // Pushes up to this size are summed by the receiving thread when their
  // summation thread is idle (handle()).
  static constexpr size_t kInlineSumBytes = 65536;
  void sum_sync(KeyState& k, uint64_t key, Queued&& q, int rank, size_t esize);
  void finish_round(Round& done, uint64_t key, TracedRound traced);
  void relay(KeyState& k, uint64_t key, Queued&& q, int rank);
  // Refuses the key from now on, and answers the workers waiting in its
  // round with the reason.
  void poison(KeyState& k, const std::string& why);
  void sum_async(KeyState& k, uint64_t key, Queued&& q, size_t esize);
  // A compressed push: decompressed into the round's sum; the last one's
  // round is compressed and answered.
  void sum_compressed(KeyState& k, uint64_t key, Queued&& q, int rank);
  // The key's codec, made at its first compressed push; false (the key
  // poisoned) when the compressor refuses.
  bool make_codec(KeyState& k, uint64_t key, const Queued& q);
  void answer(const wire::Header& request, uint64_t key, const Blob& vals,
              TracedRound traced = kUntraced, uint32_t flags = 0);
  // The sum is in the request's slot already: tells the worker where.
  void answer_in_place(const wire::Header& request, uint64_t key, const ipc::SlotDescriptor& at,
                       TracedRound traced = kUntraced);
  // A timeline event of key `key` (round `round`) with worker `sender`.
  void trace(const char* stage, uint64_t key, uint64_t round, const wire::Header& sender,
             size_t bytes, int64_t from_us, int64_t to_us);
  // The event's row and arguments.
  static std::string trace_row(uint64_t key);
  std::string trace_args(uint64_t key, uint64_t round, const wire::Header& sender,
                         size_t bytes) const;
  void refuse(const KVMessage& request, int code, const std::string& why);
  void answer_error(const wire::Header& request, int code, const std::string& why);

  KVEndpoint& kv_;
  Reducer& reducer_;
  const int num_workers_;
  const bool schedule_;
  const bool async_;
  const bool ipc_;
  const std::string plugin_path_;  // where compressor plugins are found
  ipc::SegmentTable segments_;  // receive thread only
  const std::string orphans_;   // the start of every segment name meant for this server
  std::vector<std::unique_ptr<SumThread>> sum_threads_;
  std::unordered_map<uint64_t, SumThread*> owner_;  // receive thread only
  uint64_t sequence_ = 0;                        // receive thread only
  std::once_flag stopped_;
  // Null unless BYTEPS_TRACE_ON=1. Shared with the answers' send handlers,
  // which the van may run after this server is gone (at close).
  std::shared_ptr<Timeline> timeline_;
};

}  // namespace caravan
