#include "tests/support/loopback_job.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace caravan::test {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Stranger::Stranger(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return;
  }
  sockaddr_in me{};
  socklen_t len = sizeof me;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  address_ = "127.0.0.1:" + std::to_string(ntohs(me.sin_port));
  fd_ = fd;
}

Stranger::~Stranger() {
  if (fd_ >= 0) ::close(fd_);
}

void Stranger::send(const std::vector<uint8_t>& bytes) {
  size_t off = 0;
  while (fd_ >= 0 && off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

long Stranger::receive(void* buf, size_t size, double timeout_s) {
  double deadline = now_s() + timeout_s;
  while (fd_ >= 0) {
    double left = deadline - now_s();
    if (left <= 0) return -1;
    pollfd p = {fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
    ssize_t n = ::recv(fd_, buf, size, 0);
    if (n > 0) return n;
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) return 0;
  }
  return -1;
}

bool Stranger::dropped_within(double timeout_s) {
  double deadline = now_s() + timeout_s;
  char buf[4096];
  for (;;) {
    long n = receive(buf, sizeof buf, deadline - now_s());
    if (n <= 0) return n == 0;
  }
}

LoopbackJob::LoopbackJob(LoopbackJobSpec spec)
    : port(free_port()), van_port(free_port()), spec_(std::move(spec)) {
  scheduler = std::make_unique<RunningProcess>(this->spec("scheduler", spec_.server_bin));
  ProcessSpec s = this->spec("server", spec_.server_bin);
  s.set_env.push_back({"CARAVAN_SERVER_ID", "0"});
  s.set_env.push_back({"DMLC_PORT", std::to_string(van_port)});
  server = std::make_unique<RunningProcess>(s);
}

ProcessSpec LoopbackJob::spec(const std::string& role, const std::string& bin) const {
  ProcessSpec s;
  s.argv = {bin};
  s.set_env = node_env(role, port, spec_.workers, 1);
  s.set_env.push_back({"PS_VERBOSE", "1"});
  s.set_env.insert(s.set_env.end(), spec_.env.begin(), spec_.env.end());
  return s;
}

void LoopbackJob::start_worker(int rank) {
  ProcessSpec s = spec("worker", spec_.worker_bin);
  s.argv.insert(s.argv.end(), spec_.worker_args.begin(), spec_.worker_args.end());
  s.set_env.push_back({"DMLC_WORKER_ID", std::to_string(rank)});
  workers.push_back(std::make_unique<RunningProcess>(s));
}

std::vector<RunningProcess*> LoopbackJob::all() const {
  std::vector<RunningProcess*> out = {scheduler.get(), server.get()};
  for (auto& w : workers) out.push_back(w.get());
  return out;
}

}  // namespace caravan::test
