#include "engine/local/peer_watch.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/base/error.h"
#include "engine/base/thread_name.h"

namespace caravan {

uint64_t process_start_time(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // The command name (field 2) may hold spaces and parentheses; the fields
  // after the last ')' are plain numbers: state is field 3, start time 22.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(rest >> field)) return 0;
  return std::strtoull(field.c_str(), nullptr, 10);
}

uint64_t pid_namespace_id() {
  struct stat st {};
  if (::stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

ProcessId ProcessId::self() {
  ProcessId id;
  id.pid = static_cast<int32_t>(::getpid());
  id.start_time = process_start_time(id.pid);
  id.pid_ns = pid_namespace_id();
  return id;
}

PeerWatch::PeerWatch(std::function<void(int)> on_exit) : on_exit_(std::move(on_exit)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0)
    throw Error(CARAVAN_ERR_INTERNAL, std::string("eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

PeerWatch::~PeerWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (auto& w : added_)
    if (w.pidfd >= 0) ::close(w.pidfd);
  ::close(wake_fd_);
}

bool PeerWatch::watch(int tag, const ProcessId& process) {
  if (!process.visible()) return false;
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, process.pid, 0));
  if (fd < 0 && errno != ESRCH) return false;
  // The pidfd may name a newer process that reused the pid; the start time
  // tells them apart.
  if (fd >= 0 && !process.alive()) {
    ::close(fd);
    fd = -1;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    added_.push_back(Watched{tag, fd});
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  return true;
}

void PeerWatch::run() {
  name_this_thread("cv-peer-watch");
  std::vector<Watched> watched;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
      watched.insert(watched.end(), added_.begin(), added_.end());
      added_.clear();
    }
    std::vector<int> ended;
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    for (auto it = watched.begin(); it != watched.end();) {
      if (it->pidfd < 0) {
        ended.push_back(it->tag);
        it = watched.erase(it);
      } else {
        fds.push_back(pollfd{it->pidfd, POLLIN, 0});
        ++it;
      }
    }
    for (int tag : ended) on_exit_(tag);
    if (!ended.empty()) continue;
    // No timeout: the thread has nothing to do until a process ends or the
    // owner adds a watch or stops it, and each of those wakes the poll.
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents) {
      uint64_t n;
      (void)!::read(wake_fd_, &n, sizeof n);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      for (auto& w : watched) {
        if (w.pidfd == fds[i].fd) {
          ::close(w.pidfd);
          w.pidfd = -1;  // reported on the next pass
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  added_.insert(added_.end(), watched.begin(), watched.end());
}

}  // namespace caravan
