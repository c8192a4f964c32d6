#include "engine/ipc/mapped_segment.h"

#include <cerrno>
#include <cstring>
#include <optional>

#include "engine/base/error.h"

namespace caravan::ipc {
namespace {

constexpr uint64_t kMagic = 0x31534D484E565243ull;  // "CRVNHMS1" read little-endian

struct Header {
  uint64_t magic;
  uint64_t nonce;
  uint64_t bytes;
};
static_assert(sizeof(Header) <= kSegmentHeaderBytes);

// SharedSegment's names are /dev/shm's file names, without shm_open's '/'.
std::string file_name(const std::string& name) { return name.substr(name[0] == '/' ? 1 : 0); }

}  // namespace

std::shared_ptr<MappedSegment> MappedSegment::create(const SegmentIdentity& id) {
  // Populated at once: a segment is mapped once per job, and its page
  // faults would otherwise land in the first push_pulls.
  SharedSegment memory = SharedSegment::create(
      id.bytes, "the shared memory of " + id.name + " for a server of this host", true);
  Header h{kMagic, id.nonce, id.bytes};
  std::memcpy(memory.data(), &h, sizeof h);
  const std::string file = file_name(id.name);
  if (!memory.publish(file)) {
    // The name holds this worker's pid and the job's scheduler address: a
    // segment already there was left by a crashed process whose pid was
    // reused, never by a live one.
    unlink_segment(file);
    if (!memory.publish(file))
      throw Error(CARAVAN_ERR_TRANSPORT, "cannot publish " + segment_path(file) +
                                             ": another process made the name meanwhile");
  }
  return std::shared_ptr<MappedSegment>(new MappedSegment(id.name, std::move(memory), true));
}

std::shared_ptr<MappedSegment> MappedSegment::attach(const SegmentIdentity& id) {
  // Only names a worker can have made: a worker must not get a server to
  // open, let alone remove, some other shared-memory object of this user.
  static const std::string kPrefix = "/caravan-ipc-";
  if (id.name.compare(0, kPrefix.size(), kPrefix) != 0 ||
      id.name.find('/', 1) != std::string::npos || id.name.size() > 255)
    throw Error(CARAVAN_ERR_SERVER, "'" + id.name + "' is not a caravan shared-memory name");
  if (id.bytes < kSegmentHeaderBytes)
    throw Error(CARAVAN_ERR_SERVER, "segment " + id.name + " announced with " +
                                        std::to_string(id.bytes) + " bytes, less than its header");
  const std::string file = file_name(id.name);
  std::optional<SharedSegment> memory = SharedSegment::open(file, true);
  if (!memory)
    throw Error(CARAVAN_ERR_TRANSPORT,
                "cannot open " + segment_path(file) + ": " + std::strerror(ENOENT));
  if (memory->size() != id.bytes)
    throw Error(CARAVAN_ERR_SERVER, id.name + " here is " + std::to_string(memory->size()) +
                                        " bytes, the worker made it " + std::to_string(id.bytes) +
                                        " (not the same segment: another host or namespace?)");
  Header h{};
  std::memcpy(&h, memory->data(), sizeof h);
  if (h.magic != kMagic || h.nonce != id.nonce || h.bytes != id.bytes)
    throw Error(CARAVAN_ERR_SERVER, id.name +
                                        " here is not the worker's segment (its header does not "
                                        "match: another host or namespace with the same name?)");
  memory->unlink_if_mine(file);
  return std::shared_ptr<MappedSegment>(new MappedSegment(id.name, std::move(*memory), false));
}

void MappedSegment::unlink_name() {
  if (!named_) return;
  named_ = false;
  memory_.unlink_if_mine(file_name(name_));
}

MappedSegment::~MappedSegment() { unlink_name(); }

}  // namespace caravan::ipc
