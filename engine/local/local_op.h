// One push_pull (or broadcast) of a local worker, shared by local_worker.cc
// and local_device.cc.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/local/local_worker.h"
#include "engine/local/tensor_registry.h"
#include "engine/worker/push_pull.h"

namespace caravan {

// One device tensor's buffers and events in this process (local_device.cc).
struct LocalWorker::DeviceSide {
  char* buffer = nullptr;           // this rank's copy (rank 0: the machine's sum)
  void* mine = nullptr;             // IPC event: `buffer` is ready
  void* input = nullptr;            // the caller's stream reached the tensor
  void* staged = nullptr;           // local rank 0: the sum is in slot 0
  void* done = nullptr;             // the result is in the caller's tensor
  std::vector<char*> peer_buffers;  // opened: rank 0 every other; the others rank 0's
  std::vector<void*> peer_events;
};

struct LocalWorker::LocalOp final : Worker::Op {
  LocalTensor* tensor = nullptr;
  char* data = nullptr;
  uint64_t round = 0;
  int priority = 0;
  int root = kSum;
  SteadyClock::time_point deadline;
  // Local rank 0's machine-sum thread only:
  bool summed = false;
  std::shared_ptr<Operation> remote;  // the machine's push_pull through the servers
  std::shared_ptr<std::atomic<bool>> remote_done = std::make_shared<std::atomic<bool>>(false);
  // A push_pull of device memory summed on the device (local_device.cc):
  // `data` is the caller's device pointer.
  DeviceSide* side = nullptr;
  int phase = 0;              // local rank 0's machine-sum thread: how far the device op got
  bool copying_back = false;  // the copy of the result into `data` is enqueued
  bool poll_soon = false;     // local rank 0: waiting for the device, not for a doorbell
  // Guarded by LocalWorker::mu_:
  bool done = false;
  int code = 0;
  std::string error;
};

// "tensor 'w' round 3", for messages.
std::string round_of(const LocalTensor& t, uint64_t round);

}  // namespace caravan
