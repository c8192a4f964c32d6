#include "engine/ipc/segment_table.h"

#include <string>

#include "engine/base/error.h"

namespace caravan::ipc {

void SegmentTable::attach(int rank, const AttachRequest& request) {
  auto& segments = by_worker_.at(static_cast<size_t>(rank));
  if (request.index != segments.size())
    throw Error(CARAVAN_ERR_SERVER, "worker " + std::to_string(rank) + " announced segment " +
                                        std::to_string(request.index) + ", expected segment " +
                                        std::to_string(segments.size()));
  segments.push_back(MappedSegment::attach(request.segment));
}

Blob SegmentTable::resolve(int rank, const SlotDescriptor& d) const {
  const auto& segments = by_worker_.at(static_cast<size_t>(rank));
  std::string where = "worker " + std::to_string(rank) + " sent a shared-memory slot (segment " +
                      std::to_string(d.segment) + ", offset " + std::to_string(d.offset) + ", " +
                      std::to_string(d.length) + " bytes)";
  if (d.segment >= segments.size())
    throw Error(CARAVAN_ERR_SERVER, where + ", but this server mapped " +
                                        std::to_string(segments.size()) +
                                        " segment(s) of that worker");
  const auto& seg = segments[d.segment];
  // Written so that no sum can overflow: the slot must lie after the
  // header and end inside the segment.
  if (d.length == 0 || d.offset < kSegmentHeaderBytes || d.offset > seg->size() ||
      d.length > seg->size() - d.offset)
    throw Error(CARAVAN_ERR_SERVER, where + " outside that segment's slots (bytes " +
                                        std::to_string(kSegmentHeaderBytes) + " to " +
                                        std::to_string(seg->size()) + ")");
  return Blob{seg->base() + d.offset, d.length, seg};
}

}  // namespace caravan::ipc
