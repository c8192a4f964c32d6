#include "tcp_baseline.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace caravan_bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 4u << 20;  // large writes, as a van's big segments are

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) close(fd); }
};

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

}  // namespace

double MeasureTcpStream(const std::string& host, double seconds, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &res); rc != 0) {
    *error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return -1;
  }
  Fd listener, sender, receiver;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  listener.fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = listener.fd >= 0 && bind(listener.fd, res->ai_addr, res->ai_addrlen) == 0 &&
            listen(listener.fd, 1) == 0 &&
            getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  freeaddrinfo(res);
  if (!ok) return *error = Errno(("listen on " + host).c_str()), -1;
  sender.fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sender.fd < 0 || connect(sender.fd, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return *error = Errno(("connect to " + host).c_str()), -1;
  receiver.fd = accept(listener.fd, nullptr, nullptr);
  if (receiver.fd < 0) return *error = Errno("accept"), -1;
  // A stalled peer must not hang the benchmark.
  timeval tv{10, 0};
  setsockopt(receiver.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(sender.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::vector<char> buf(kChunk, 1);
    while (!stop.load(std::memory_order_relaxed)) {
      if (send(sender.fd, buf.data(), buf.size(), MSG_NOSIGNAL) < 0 && errno != EINTR) break;
    }
    shutdown(sender.fd, SHUT_WR);
  });

  std::vector<char> buf(kChunk);
  size_t bytes = 0;
  Clock::time_point start, deadline;
  bool started = false;
  ssize_t n;
  while ((n = recv(receiver.fd, buf.data(), buf.size(), 0)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = Errno("recv");
      break;
    }
    auto now = Clock::now();
    // Start the clock at the first byte: connection set-up is not throughput.
    if (!started) {
      started = true;
      start = now;
      deadline = now + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(seconds));
      continue;
    }
    bytes += static_cast<size_t>(n);
    if (now >= deadline) stop = true;
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  writer.join();
  if (n < 0) return -1;
  if (!started || elapsed <= 0) return *error = "no data arrived", -1;
  return static_cast<double>(bytes) / elapsed / 1e9;
}

}  // namespace caravan_bench
