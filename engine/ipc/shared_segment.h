// POSIX shared memory objects (the files of /dev/shm) mapped into this
// process, published under their name only once they are filled in, and a
// way to sleep until names appear there. The one segment class of the
// engine: the local group's control and tensor segments (local/) and the
// worker's segments for the servers of its host (MappedSegment) are made of
// it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace caravan {

class SharedSegment {
 public:
  // A new segment of `bytes`, zero-filled and without a name yet. The
  // memory is reserved now, so a full /dev/shm is an error here and not a
  // SIGBUS at first touch. `what` says what it is for, for that error.
  // `populate`: its pages mapped now, so that their faults do not land in
  // the first operations that use it.
  static SharedSegment create(size_t bytes, const std::string& what, bool populate = false);
  // The segment called `name`, or nothing when there is none.
  static std::optional<SharedSegment> open(const std::string& name, bool populate = false);
  // No segment (yet).
  SharedSegment() = default;

  SharedSegment(SharedSegment&& o) noexcept;
  SharedSegment& operator=(SharedSegment&& o) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  // Gives this segment the name `name` in one step, so nobody can open it
  // half filled in: false when the name is taken.
  bool publish(const std::string& name);
  // Removes `name` if it still names this segment (and not a newer one).
  void unlink_if_mine(const std::string& name) const;

  char* data() const { return static_cast<char*>(base_); }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

// "/dev/shm/<name>": where shm_open keeps `name` on Linux.
std::string segment_path(const std::string& name);
// Removes `name`; a name already gone is not an error.
void unlink_segment(const std::string& name);
// The names in /dev/shm that start with `prefix`.
std::vector<std::string> segments_named(const std::string& prefix);

// Wakes up when a name is added to or removed from /dev/shm (inotify), so
// a process waiting for another to publish a segment sleeps instead of
// looking again and again.
class SegmentDirectoryWatch {
 public:
  SegmentDirectoryWatch();
  ~SegmentDirectoryWatch();
  SegmentDirectoryWatch(const SegmentDirectoryWatch&) = delete;
  SegmentDirectoryWatch& operator=(const SegmentDirectoryWatch&) = delete;
  // Returns after the next change, or at `deadline`.
  void wait_until(std::chrono::steady_clock::time_point deadline);

 private:
  int fd_ = -1;
};

}  // namespace caravan
