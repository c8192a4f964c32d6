#include "engine/ipc/mapped_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Error fail(const std::string& what, const std::string& name, int err) {
  return Error(CARAVAN_ERR_TRANSPORT, what + " " + name + ": " + std::strerror(err));
}

// Populated at once: a segment is mapped once per job, and its page
// faults would otherwise land in the first push_pulls.
char* map(int fd, size_t bytes, const std::string& name) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) throw fail("mmap of", name, errno);
  return static_cast<char*>(p);
}

}  // namespace

std::shared_ptr<MappedSegment> MappedSegment::create(const SegmentIdentity& id) {
  int fd = shm_open(id.name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    // The name holds this worker's pid and the job's scheduler address: a
    // segment already there was left by a crashed process whose pid was
    // reused, never by a live one.
    shm_unlink(id.name.c_str());
    fd = shm_open(id.name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  }
  if (fd < 0) throw fail("shm_open (create) of", id.name, errno);
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(id.bytes));
  char* base = nullptr;
  if (rc == 0) {
    try {
      base = map(fd, id.bytes, id.name);
    } catch (...) {
      close(fd);
      shm_unlink(id.name.c_str());
      throw;
    }
  }
  close(fd);
  if (rc != 0) {
    shm_unlink(id.name.c_str());
    throw fail("reserving " + std::to_string(id.bytes) + " bytes of /dev/shm for", id.name, rc);
  }
  Header h{kMagic, id.nonce, id.bytes};
  std::memcpy(base, &h, sizeof h);
  return std::shared_ptr<MappedSegment>(new MappedSegment(id.name, base, id.bytes, true));
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
  int fd = shm_open(id.name.c_str(), O_RDWR, 0);
  if (fd < 0) throw fail("shm_open of", id.name, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    throw fail("fstat of", id.name, err);
  }
  if (static_cast<uint64_t>(st.st_size) != id.bytes) {
    close(fd);
    throw Error(CARAVAN_ERR_SERVER, id.name + " here is " + std::to_string(st.st_size) +
                                        " bytes, the worker made it " + std::to_string(id.bytes) +
                                        " (not the same segment: another host or namespace?)");
  }
  char* base = nullptr;
  try {
    base = map(fd, id.bytes, id.name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  Header h{};
  std::memcpy(&h, base, sizeof h);
  if (h.magic != kMagic || h.nonce != id.nonce || h.bytes != id.bytes) {
    munmap(base, id.bytes);
    throw Error(CARAVAN_ERR_SERVER, id.name +
                                        " here is not the worker's segment (its header does not "
                                        "match: another host or namespace with the same name?)");
  }
  shm_unlink(id.name.c_str());
  return std::shared_ptr<MappedSegment>(new MappedSegment(id.name, base, id.bytes, false));
}

void MappedSegment::unlink_name() {
  if (!named_) return;
  named_ = false;
  shm_unlink(name_.c_str());
}

MappedSegment::~MappedSegment() {
  unlink_name();
  munmap(base_, size_);
}

}  // namespace caravan::ipc
