// Tensors in device memory (C API 1.2): a push_pull or broadcast of a
// device tensor is carried through page-locked host staging buffers,
// partition by partition, so that copies overlap the network:
//
//   caller's stream --ready--> d2h stream: partition 0, 1, ... copied out,
//   each with an event; the staging thread sends each partition once its
//   event has passed; each partition's result, as it lands, is copied back
//   on the h2d stream; the handle is done when the last copy back is.
//
// Every device call goes through the device reducer plugin's services
// (DeviceMemory): libcaravan links no CUDA. A worker that sums device
// memory itself (the local group, through IPC: Worker::submit_on_device)
// gets the tensor as it is; one that takes whole host tensors (a local
// group's broadcast, or a device reducer without IPC) gets the whole tensor,
// submitted by the staging thread once its copy out has ended; a job of one
// worker needs no staging at all (the sum is the data).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/reducer/device_memory.h"
#include "engine/worker/worker.h"

namespace caravan {

class DeviceStager {
 public:
  // `cache_bytes` (CARAVAN_STAGING_BYTES) bounds the staging buffers kept
  // for reuse between steps; every wait ends after `op_timeout_s`.
  DeviceStager(Worker& worker, std::shared_ptr<DeviceMemory> device, int op_timeout_s,
               size_t cache_bytes);
  ~DeviceStager();

  // Starts the operation on device pointer `data`, ordered after the work
  // queued so far on `stream` (an opaque cudaStream_t; NULL: the default
  // stream). Throws caravan::Error for misuse found up front, naming the
  // tensor.
  std::shared_ptr<Worker::Op> submit(const std::string& name, void* data, size_t count, int dtype,
                                     int priority, int root, void* stream);
  // As Worker::poll and Worker::wait; done means the result is in `data`.
  int poll(Worker::Op& op, std::string* error);
  int wait(Worker::Op& op, std::string* error);

  const std::string& description() const { return device_->description(); }

 private:
  struct Staging;
  struct DeviceOp;

  Staging& take_staging(const std::string& name, size_t bytes);
  void give_back(Staging& s, bool reusable);
  void free_staging(Staging& s);
  void run();  // the staging thread
  // Done and the copies back passed: 1, else 0; a failure as a negative code.
  int check_done(DeviceOp& op, std::string* error, bool block);

  Worker& worker_;
  // Shared with a worker that sums on the device (the local group), which
  // may outlive the stager.
  std::shared_ptr<DeviceMemory> device_;
  int op_timeout_s_;
  size_t cache_bytes_;
  DeviceMemory::Stream d2h_ = nullptr;
  DeviceMemory::Stream h2d_ = nullptr;

  std::mutex mu_;  // staging_, cached_bytes_, queue_, stop_
  std::condition_variable cv_;
  std::unordered_map<std::string, std::unique_ptr<Staging>> staging_;
  std::list<Staging*> idle_;                      // reusable buffers, least recently used first
  std::vector<std::unique_ptr<Staging>> failed_;  // of failed ops: freed last
  size_t cached_bytes_ = 0;
  std::deque<std::shared_ptr<DeviceOp>> queue_;  // ops with partitions still to send
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace caravan
