// The summation server on top of the KV layer: checks each push_pull or
// broadcast request, and hands it to its key, whose kind (key_kinds.h:
// sum, relay, compressed, async) does the rest through the key's round.
//
// Sums run on BYTEPS_SERVER_ENGINE_THREAD summation threads. Each key
// belongs to one thread, chosen when the key is first seen as the thread
// with the fewest bytes of keys so far, so a key's state is only ever
// touched by its thread and large keys spread evenly. With
// BYTEPS_SERVER_ENABLE_SCHEDULE a thread serves the queued key with the
// fewest finished rounds first. A small push to an idle thread is summed
// by the receiving thread itself.
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
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/base/config.h"
#include "engine/ipc/segment_table.h"
#include "engine/kv/kv_endpoint.h"
#include "engine/reducer/reducer.h"
#include "engine/server/answers.h"
#include "engine/server/key_kinds.h"

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
  // One of the threads that sum (BytePS calls them engine threads), with
  // the requests queued for it and the keys it owns.
  struct SumThread {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Push> queue;
    bool stop = false;
    // A request is being processed, by this thread or inline by the
    // receiving thread (handle()); whoever set it owns `keys` until it is
    // cleared, under mu.
    bool busy = false;
    uint64_t bytes = 0;  // of the keys it owns; read by the receive thread only
    std::unordered_map<uint64_t, KeyState> keys;  // whoever holds busy
    std::thread thread;
  };

  void run(SumThread& t);
  Push take(SumThread& t);  // t.mu held, queue not empty
  // Maps the segment an attach request announces and answers it.
  void attach(const KVMessage& request, int rank);
  // Checks the push against its key (made at the first) and hands it to
  // the key's kind.
  void process(SumThread& t, Push&& q);
  // process(), its failure logged; the caller holds t.busy.
  void run_one(SumThread& t, Push&& q);
  // Pushes up to this size are summed by the receiving thread when their
  // summation thread is idle (handle()).
  static constexpr size_t kInlineSumBytes = 65536;
  // The kind a key's first push makes it; null (the key poisoned) when
  // its compressor refuses.
  std::unique_ptr<KeyKind> kind_for(KeyState& k, uint64_t key, const Push& first);

  KVEndpoint& kv_;
  const int num_workers_;
  const bool schedule_;
  const bool async_;
  const bool ipc_;
  ipc::SegmentTable segments_;  // receive thread only
  const std::string orphans_;   // the start of every segment name meant for this server
  std::vector<std::unique_ptr<SumThread>> sum_threads_;
  std::unordered_map<uint64_t, SumThread*> owner_;  // receive thread only
  uint64_t sequence_ = 0;                           // receive thread only
  std::once_flag stopped_;
  Answers answers_;
  KeyContext context_;  // what every key's kind uses
};

}  // namespace caravan
