#include "host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "hostfile.h"

extern char** environ;

namespace caravan::launch {

std::string run_discovery(const std::string& command, int timeout_s) {
  const std::string what = "--host-discovery-script " + shell_quote(command);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(what + ": cannot make a pipe: " + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own process group, so that a deadline kills what it started too;
  // default signal handling and mask, not the launcher's.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    throw std::runtime_error(what + ": cannot start /bin/sh: " + strerror(rc));
  }
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool late = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      late = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline, judged above
    char buf[4096];
    ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the end of its output
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (1u << 20)) {
      late = true;  // a runaway: treated as one that does not finish
      break;
    }
  }
  close(out[0]);
  if (late) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (late)
    throw std::runtime_error(what + ": did not finish within " + std::to_string(timeout_s) +
                             " s (or printed more than 1 MiB); killed");
  if (WIFSIGNALED(status))
    throw std::runtime_error(what + ": killed by signal " + std::to_string(WTERMSIG(status)));
  if (WEXITSTATUS(status) != 0)
    throw std::runtime_error(what + ": exited with status " + std::to_string(WEXITSTATUS(status)));
  return text;
}

}  // namespace caravan::launch
