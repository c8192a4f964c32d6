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
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>

namespace caravan::test {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Starts spec in a process group of its own; returns the pid and the read
// end of its stdout+stderr.
pid_t spawn(const ProcessSpec& spec, int* out_fd) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return -1;
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
  *out_fd = pipefd[0];
  return pid;
}

}  // namespace

RunningProcess::RunningProcess(const ProcessSpec& spec) {
  start_ = now_s();
  pid_ = spawn(spec, &fd_);
}

RunningProcess::~RunningProcess() {
  if (pid_ > 0 && !exited_) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

void RunningProcess::signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

bool RunningProcess::read_some(int timeout_ms) {
  if (fd_ < 0) return false;
  pollfd p = {fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return true;
  char buf[8192];
  ssize_t n = read(fd_, buf, sizeof buf);
  if (n > 0) {
    result_.output.append(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && errno == EINTR) return true;
  close(fd_);
  fd_ = -1;
  return false;
}

bool RunningProcess::wait_for_output(const std::string& needle, double timeout_s) {
  return wait_for([&](const std::string& out) { return out.find(needle) != std::string::npos; },
                  timeout_s);
}

bool RunningProcess::wait_for(const std::function<bool(const std::string&)>& done,
                              double timeout_s) {
  double deadline = now_s() + timeout_s;
  while (!done(result_.output)) {
    double left = deadline - now_s();
    if (left <= 0 || !read_some(static_cast<int>(left * 1000) + 1)) break;
  }
  return done(result_.output);
}

ProcessResult RunningProcess::wait(double timeout_s) {
  if (exited_) return result_;
  double deadline = now_s() + timeout_s;
  while (fd_ >= 0) {
    double left = deadline - now_s();
    if (left <= 0) {
      result_.timed_out = true;
      kill(-pid_, SIGKILL);
      break;
    }
    read_some(static_cast<int>(left * 1000) + 1);
  }
  int status = 0;
  waitpid(pid_, &status, 0);
  kill(-pid_, SIGKILL);
  exited_ = true;
  result_.seconds = now_s() - start_;
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.signal = WTERMSIG(status);
  return result_;
}

ProcessResult run_process(const ProcessSpec& spec) {
  RunningProcess p(spec);
  return p.wait(spec.timeout_s);
}

ProcessSpec launch_spec(const std::string& launcher, int workers, int servers,
                        const std::vector<std::string>& command,
                        std::vector<std::pair<std::string, std::string>> env, double timeout_s) {
  ProcessSpec spec;
  spec.argv = {launcher, "--workers", std::to_string(workers), "--servers", std::to_string(servers),
               "--"};
  spec.argv.insert(spec.argv.end(), command.begin(), command.end());
  spec.set_env = std::move(env);
  spec.timeout_s = timeout_s;
  return spec;
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

namespace {

// Whether a socket could bind the port on every address now.
bool bindable(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

}  // namespace

// Below the ephemeral range: a port the kernel handed out for port 0 was
// free when chosen, but any process's connect() or bind(0) could get it
// before the job listened there. VanUcx.PsLite's scheduler failed so under
// ASan ("cannot listen on 0.0.0.0:34917: Address already in use"; UCX opens
// many connections). Below the range only tests choosing ports collide,
// and they draw from about 20000 ports at random.
int free_port() {
  int low = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &low) != 1) low = 32768;
    std::fclose(f);
  }
  const int first = 10000, last = low - 1;
  std::random_device seed;
  std::mt19937 rng(seed() ^ static_cast<unsigned>(getpid()));
  if (last - first >= 1000) {
    std::uniform_int_distribution<int> pick(first, last);
    for (int tries = 0; tries < 1000; ++tries) {
      int port = pick(rng);
      if (bindable(port)) return port;
    }
  }
  throw std::runtime_error("free_port: no free port in " + std::to_string(first) + ".." +
                           std::to_string(last) + " (below ip_local_port_range)");
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace caravan::test
