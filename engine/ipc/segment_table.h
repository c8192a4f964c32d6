// A server's view of the shared memory of the workers on its host: the
// segments each worker asked it to map, and the checks that turn a
// worker's slot descriptor into memory. Used by the KV receive thread only.
#pragma once

#include <memory>
#include <vector>

#include "engine/ipc/mapped_segment.h"
#include "engine/ipc/messages.h"
#include "engine/kv/kv_message.h"

namespace caravan::ipc {

class SegmentTable {
 public:
  explicit SegmentTable(int num_workers) : by_worker_(static_cast<size_t>(num_workers)) {}

  // Maps the segment worker `rank` announces. Segments must come in the
  // order the worker numbered them. Throws caravan::Error saying why not
  // (the worker then sends that server's values through the van).
  void attach(int rank, const AttachRequest& request);

  // The memory `d` names in worker `rank`'s segments, kept mapped by the
  // Blob. Throws caravan::Error (CARAVAN_ERR_SERVER) naming the worker
  // and the descriptor when it lies outside what that worker attached.
  Blob resolve(int rank, const SlotDescriptor& d) const;

 private:
  std::vector<std::vector<std::shared_ptr<MappedSegment>>> by_worker_;
};

}  // namespace caravan::ipc
