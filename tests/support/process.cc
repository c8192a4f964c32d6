#include "tests/support/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

namespace caravan::test {

ProcessResult run_process(const ProcessSpec& spec) {
  using Clock = std::chrono::steady_clock;
  ProcessResult r;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return r;
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (auto& name : spec.unset_env) unsetenv(name.c_str());
    for (auto& [k, v] : spec.set_env) setenv(k.c_str(), v.c_str(), 1);
    dup2(pipefd[1], 1);
    dup2(pipefd[1], 2);
    std::vector<char*> argv;
    for (auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(pipefd[1]);
  auto deadline = start + std::chrono::milliseconds(static_cast<long long>(spec.timeout_s * 1000));
  bool open = true;
  while (open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p = {pipefd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    if (!p.revents) continue;
    char buf[8192];
    ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n > 0)
      r.output.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR)
      open = false;
  }
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  // Whatever the program left behind in its group goes too.
  kill(-pid, SIGKILL);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::vector<std::pair<std::string, std::string>> node_env(const std::string& role, int port,
                                                          int workers, int servers) {
  return {{"DMLC_ROLE", role},
          {"DMLC_PS_ROOT_URI", "127.0.0.1"},
          {"DMLC_PS_ROOT_PORT", std::to_string(port)},
          {"DMLC_NUM_WORKER", std::to_string(workers)},
          {"DMLC_NUM_SERVER", std::to_string(servers)},
          {"DMLC_NODE_HOST", "127.0.0.1"}};
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace caravan::test
