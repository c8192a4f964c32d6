#include "engine/ipc/shared_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/base/error.h"

namespace caravan {
namespace {

constexpr char kShmDir[] = "/dev/shm";

std::string os_error(int err) { return std::strerror(err); }

Error shm_error(const std::string& what, int err) {
  return Error(CARAVAN_ERR_INTERNAL, what + ": " + os_error(err));
}

void* map(int fd, size_t bytes, bool populate) {
  return ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                fd, 0);
}

}  // namespace

std::string segment_path(const std::string& name) { return std::string(kShmDir) + "/" + name; }

void unlink_segment(const std::string& name) {
  if (::unlink(segment_path(name).c_str()) != 0 && errno != ENOENT)
    throw shm_error("cannot remove " + segment_path(name), errno);
}

std::vector<std::string> segments_named(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* dir = ::opendir(kShmDir);
  if (!dir) return out;
  while (dirent* e = ::readdir(dir))
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.emplace_back(e->d_name);
  ::closedir(dir);
  return out;
}

SharedSegment SharedSegment::create(size_t bytes, const std::string& what, bool populate) {
  SharedSegment s;
  // O_TMPFILE: the segment has no name until publish(), so a crash before
  // then leaves nothing behind in /dev/shm.
  s.fd_ = ::open(kShmDir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (s.fd_ < 0) throw shm_error(std::string("cannot create a segment in ") + kShmDir, errno);
  int err = ::posix_fallocate(s.fd_, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    throw Error(CARAVAN_ERR_INTERNAL,
                "cannot reserve " + std::to_string(bytes) + " bytes of shared memory in " +
                    kShmDir + " for " + what + ": " + os_error(err) +
                    (err == ENOSPC ? " (in a container, give it a larger /dev/shm, e.g. docker "
                                     "--shm-size)"
                                   : ""));
  }
  s.size_ = bytes;
  s.base_ = map(s.fd_, bytes, populate);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    throw shm_error("cannot map " + std::to_string(bytes) + " bytes of shared memory", errno);
  }
  return s;
}

std::optional<SharedSegment> SharedSegment::open(const std::string& name, bool populate) {
  SharedSegment s;
  s.fd_ = ::open(segment_path(name).c_str(), O_RDWR | O_CLOEXEC);
  if (s.fd_ < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw shm_error("cannot open " + segment_path(name), errno);
  }
  struct stat st {};
  if (::fstat(s.fd_, &st) != 0) throw shm_error("cannot stat " + segment_path(name), errno);
  s.dev_ = st.st_dev;
  s.ino_ = st.st_ino;
  s.size_ = static_cast<size_t>(st.st_size);
  if (s.size_ == 0) return s;
  s.base_ = map(s.fd_, s.size_, populate);
  if (s.base_ == MAP_FAILED) {
    s.base_ = nullptr;
    throw shm_error("cannot map " + segment_path(name), errno);
  }
  return s;
}

SharedSegment::SharedSegment(SharedSegment&& o) noexcept { *this = std::move(o); }

SharedSegment& SharedSegment::operator=(SharedSegment&& o) noexcept {
  if (this == &o) return *this;
  this->~SharedSegment();
  fd_ = o.fd_;
  base_ = o.base_;
  size_ = o.size_;
  dev_ = o.dev_;
  ino_ = o.ino_;
  o.fd_ = -1;
  o.base_ = nullptr;
  o.size_ = 0;
  return *this;
}

SharedSegment::~SharedSegment() {
  if (base_) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

bool SharedSegment::publish(const std::string& name) {
  std::string path = segment_path(name);
  // linkat() fails with EEXIST rather than replacing a name, which makes
  // publishing a race that exactly one process wins.
  std::string self = "/proc/self/fd/" + std::to_string(fd_);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    if (errno == EEXIST) return false;
    throw shm_error("cannot publish shared memory as " + path, errno);
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  return true;
}

void SharedSegment::unlink_if_mine(const std::string& name) const {
  struct stat st {};
  std::string path = segment_path(name);
  if (::stat(path.c_str(), &st) != 0) return;
  if (st.st_dev == dev_ && st.st_ino == ino_) ::unlink(path.c_str());
}

SegmentDirectoryWatch::SegmentDirectoryWatch() {
  fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd_ < 0) throw shm_error("inotify_init1", errno);
  if (::inotify_add_watch(fd_, kShmDir, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) < 0) {
    int err = errno;
    ::close(fd_);
    throw shm_error(std::string("cannot watch ") + kShmDir, err);
  }
}

SegmentDirectoryWatch::~SegmentDirectoryWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void SegmentDirectoryWatch::wait_until(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return;
  pollfd p{fd_, POLLIN, 0};
  int timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, INT32_MAX));
  if (::poll(&p, 1, timeout_ms) > 0) {
    alignas(inotify_event) char buf[4096];
    while (::read(fd_, buf, sizeof buf) > 0) {
    }
  }
}

}  // namespace caravan
