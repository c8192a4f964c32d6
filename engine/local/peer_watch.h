// Notices at once when another process of this machine ends, however it
// ends (kill -9 included): one thread sleeps in poll() on a pidfd per
// watched process.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace caravan {

// When process `pid` started, in clock ticks since boot (field 22 of
// /proc/<pid>/stat), or 0 when there is no such process. A pid can be
// reused once its process is gone; the pair (pid, start time) cannot.
uint64_t process_start_time(int pid);

// The inode of this process's PID namespace: pids of processes in another
// namespace (another container) mean nothing here.
uint64_t pid_namespace_id();

// One process for good: a pid is reused once its process is gone, the pair
// (pid, start time) is not. Plain data, kept in shared memory.
struct ProcessId {
  int32_t pid = 0;
  uint32_t reserved = 0;
  uint64_t start_time = 0;
  uint64_t pid_ns = 0;

  static ProcessId self();
  // Whether this process can see it: not when it runs in another PID
  // namespace (another container).
  bool visible() const { return pid_ns == pid_namespace_id(); }
  // False once it is gone; true also when it is not visible.
  bool alive() const { return !visible() || process_start_time(pid) == start_time; }
};

class PeerWatch {
 public:
  // `on_exit(tag)` runs on the watch thread when a watched process ends.
  explicit PeerWatch(std::function<void(int tag)> on_exit);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // Watches the process; one already gone is reported at once. Returns
  // false when it cannot be watched (another PID namespace, or no
  // pidfd_open on this kernel); the caller then relies on its deadlines.
  bool watch(int tag, const ProcessId& process);

 private:
  struct Watched {
    int tag;
    int pidfd;  // -1: already gone, report it
  };
  void run();

  std::function<void(int)> on_exit_;
  int wake_fd_ = -1;  // eventfd: new watches, or stop
  std::mutex mu_;
  std::vector<Watched> added_;  // guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  std::thread thread_;
};

}  // namespace caravan
