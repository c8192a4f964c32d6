#include "tcp_baseline.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace caravan_bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kChunk = 4u << 20;  // large writes, as a van's big segments are

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string Errno(const char* what) { return std::string(what) + ": " + strerror(errno); }

// A connected sender/receiver pair over `host`; false with *error set.
bool ConnectPair(const std::string& host, Fd* sender, Fd* receiver, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), "0", &hints, &res); rc != 0) {
    *error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return false;
  }
  Fd listener;
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  listener.fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = listener.fd >= 0 && bind(listener.fd, res->ai_addr, res->ai_addrlen) == 0 &&
            listen(listener.fd, 1) == 0 &&
            getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  freeaddrinfo(res);
  if (!ok) return *error = Errno(("listen on " + host).c_str()), false;
  sender->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sender->fd < 0 || connect(sender->fd, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return *error = Errno(("connect to " + host).c_str()), false;
  receiver->fd = accept(listener.fd, nullptr, nullptr);
  if (receiver->fd < 0) return *error = Errno("accept"), false;
  // A stalled peer must not hang the benchmark.
  timeval tv{10, 0};
  for (int fd : {sender->fd, receiver->fd}) {
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  return true;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// A connection whose far end, a thread, returns every `piece` bytes of each
// `bytes`-byte round as soon as they arrive.
class Echo {
 public:
  bool Open(const std::string& host, size_t bytes, size_t piece, std::string* error) {
    if (piece == 0 || piece > bytes) return *error = "bad echo piece size", false;
    if (!ConnectPair(host, &client_, &far_, error)) return false;
    int one = 1;
    setsockopt(client_.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(far_.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    thread_ = std::thread([this, bytes, piece] {
      std::vector<char> buf(piece);
      for (bool ok = true; ok;)
        for (size_t done = 0; ok && done < bytes; done += piece) {
          size_t n = std::min(piece, bytes - done);
          ok = RecvAll(far_.fd, buf.data(), n) && SendAll(far_.fd, buf.data(), n);
        }
    });
    return true;
  }
  ~Echo() {
    if (!thread_.joinable()) return;
    shutdown(client_.fd, SHUT_RDWR);
    thread_.join();
  }
  int fd() const { return client_.fd; }

 private:
  Fd client_, far_;
  std::thread thread_;
};

// Runs round() until at least 5 timed rounds and `seconds` passed; the
// first round warms the connection and is not timed. GB/s for `bytes` a
// round, or -1 as soon as a round fails.
template <class Round>
double TimeRounds(size_t bytes, double seconds, Round&& round) {
  long rounds = 0;
  Clock::time_point start;
  for (long i = 0;; ++i) {
    if (i == 1) start = Clock::now();
    if (!round()) return -1;
    if (i >= 1) ++rounds;
    double so_far = std::chrono::duration<double>(Clock::now() - start).count();
    if (rounds >= 5 && so_far >= seconds) break;
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(bytes) * static_cast<double>(rounds) / elapsed / 1e9;
}

}  // namespace

double MeasureTcpStream(const std::string& host, double seconds, std::string* error) {
  Fd sender, receiver;
  if (!ConnectPair(host, &sender, &receiver, error)) return -1;

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
      deadline =
          now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
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

double MeasureTcpPingPong(const std::string& host, size_t bytes, double seconds, std::string* error,
                          double* p50_us) {
  Echo echo;
  if (!echo.Open(host, bytes, bytes, error)) return -1;
  std::vector<char> buf(bytes, 1);
  std::vector<double> us;
  double gbps = TimeRounds(bytes, seconds, [&] {
    auto t0 = Clock::now();
    bool ok = SendAll(echo.fd(), buf.data(), bytes) && RecvAll(echo.fd(), buf.data(), bytes);
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    return ok;
  });
  if (gbps < 0) *error = Errno("ping-pong");
  if (p50_us && gbps >= 0) {
    us.erase(us.begin());  // the untimed warm-up round
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    *p50_us = us[us.size() / 2];
  }
  return gbps;
}

double MeasureTcpPipelinedEcho(const std::string& host, size_t bytes, size_t piece, double seconds,
                               std::string* error) {
  Echo echo;
  if (!echo.Open(host, bytes, std::min(piece, bytes), error)) return -1;
  // A sender thread starts each round when asked, so that only one round
  // is in flight, as with one tensor per push_pull.
  std::mutex mu;
  std::condition_variable cv;
  long asked = 0;
  bool stop = false, send_failed = false;
  std::thread sender([&] {
    std::vector<char> buf(bytes, 1);
    for (long sent = 0;; ++sent) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return stop || asked > sent; });
      if (stop) return;
      lock.unlock();
      if (SendAll(echo.fd(), buf.data(), bytes)) continue;
      lock.lock();
      send_failed = true;
      return;
    }
  });
  std::vector<char> buf(bytes);
  double gbps = TimeRounds(bytes, seconds, [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++asked;
    }
    cv.notify_one();
    return RecvAll(echo.fd(), buf.data(), bytes);
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
    if (gbps < 0) *error = send_failed ? "pipelined echo: send failed" : Errno("pipelined echo");
  }
  cv.notify_one();
  sender.join();
  return gbps;
}

}  // namespace caravan_bench
