// A worker's shared-memory segment for a server of its host (a
// SharedSegment under a name in /dev/shm): created by the worker, opened by
// the server. The segment starts with a header naming its maker, so a
// server that opens a name can tell the worker's segment from anything
// else that carries it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/ipc/shared_segment.h"

namespace caravan::ipc {

// Bytes before the first slot: the header, padded so slots start on a
// cache line.
constexpr size_t kSegmentHeaderBytes = 64;

// What a server must find in a segment before it trusts it.
struct SegmentIdentity {
  std::string name;    // shm_open name: "/caravan-ipc-..."
  uint64_t bytes = 0;  // the whole segment, header included
  uint64_t nonce = 0;  // random, chosen by the worker for this segment
};

class MappedSegment {
 public:
  // Worker side: creates the segment, reserves its memory now (so a full
  // /dev/shm is an error here rather than a SIGBUS at first touch) and
  // writes the header. The name stays until unlink_name(). Throws
  // caravan::Error saying which call failed on which name.
  static std::shared_ptr<MappedSegment> create(const SegmentIdentity& id);
  // Server side: opens the worker's segment, checks its size and header
  // against `id`, maps it and removes the name at once, so nothing is left
  // in /dev/shm whatever happens to either process later. Throws
  // caravan::Error with the reason.
  static std::shared_ptr<MappedSegment> attach(const SegmentIdentity& id);

  MappedSegment(const MappedSegment&) = delete;
  MappedSegment& operator=(const MappedSegment&) = delete;
  ~MappedSegment();

  // Removes the name if this process still holds it; a name already
  // removed (by the server) is not an error.
  void unlink_name();

  char* base() const { return memory_.data(); }
  size_t size() const { return memory_.size(); }
  const std::string& name() const { return name_; }

 private:
  MappedSegment(std::string name, SharedSegment memory, bool named)
      : name_(std::move(name)), memory_(std::move(memory)), named_(named) {}

  std::string name_;  // shm_open's form: "/caravan-ipc-..."
  SharedSegment memory_;
  bool named_;  // this process created the name and has not removed it
};

}  // namespace caravan::ipc
