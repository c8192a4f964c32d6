// A worker's shared memory towards one server on its host (BYTEPS_ENABLE_IPC):
// segments the worker creates and the server maps, carved into one slot
// per partition. A partition keeps its slot for the whole job, and a tensor
// has at most one push_pull in flight, so the worker's values, the
// server's sum and the next round never meet in one slot.
//
// A lane exists only for a server that advertises this worker's address,
// and that is only a hint: containers can share an address without
// sharing /dev/shm, and two machines behind NAT can advertise the same one.
// What decides is the server itself: it must open the segment by name and
// find in its header the random nonce the worker sent along; if it cannot,
// it says why and this lane stays on the van.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/ipc/mapped_segment.h"
#include "engine/ipc/messages.h"
#include "engine/kv/kv_endpoint.h"

namespace caravan::ipc {

struct Slot {
  SlotDescriptor where;
  char* data = nullptr;  // nullptr: this partition goes through the van
};

class WorkerLane {
 public:
  // `server` is the server's node id and `server_name` its description;
  // segment names start with `name_prefix`, unique to this job and worker.
  // An attach waits at most `timeout_s` for the server's answer.
  WorkerLane(KVEndpoint& kv, int server, std::string server_name, std::string name_prefix,
             int timeout_s);

  // One slot per entry of `bytes`, all in one segment; a new segment (when
  // none has room) costs one round trip to the server. Returns nothing
  // when these partitions must go through the van: the server cannot map
  // this worker's memory (said once at info level, and the lane stays off)
  // or /dev/shm has no room (a warning). Throws caravan::Error when the
  // server is lost or does not answer in time.
  std::vector<Slot> place(const std::vector<size_t>& bytes, const std::string& tensor);

 private:
  struct Segment {
    std::shared_ptr<MappedSegment> memory;
    size_t used;  // bytes from the start, header included
  };
  // Asks the server to map segment `index`; false when it says it cannot.
  bool attach(const SegmentIdentity& segment, size_t index);

  KVEndpoint& kv_;
  const int server_;
  const std::string server_name_;
  const std::string name_prefix_;
  const int timeout_s_;

  std::mutex mu_;  // held across an attach's round trip: one segment at a time
  std::vector<Segment> segments_;
  size_t capacity_ = 0;
  bool refused_ = false;
};

}  // namespace caravan::ipc
