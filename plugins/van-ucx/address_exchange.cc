#include "address_exchange.h"

#include <netdb.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "tcp/tcp_address.h"

namespace caravan::van_ucx {
namespace {

using plugin::Error;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kWakeKey = 1;
constexpr uint64_t kListenKey = 2;
constexpr uint64_t kFirstFetchKey = 16;  // a fetch's epoll key: this plus its token
// A peer that accepted must answer within this; one that did not (a
// stranger on the port, a peer stopped mid-answer) is tried again.
constexpr auto kFetchTimeout = std::chrono::seconds(10);

std::string errno_text(int err) { return std::strerror(err); }

void watch(int epoll, int fd, uint32_t events, uint64_t key, int op) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = key;
  epoll_ctl(epoll, op, fd, &ev);
}

}  // namespace

AddressExchange::AddressExchange(const plugin::Host& host, std::string worker_address,
                                 Fetched fetched)
    : host_(host), worker_address_(std::move(worker_address)), fetched_(std::move(fetched)) {
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_ < 0 || wake_fd_ < 0) {
    int err = errno;
    for (int fd : {epoll_, wake_fd_})
      if (fd >= 0) ::close(fd);
    throw Error(CARAVAN_STATUS_UNAVAILABLE, "epoll or eventfd: " + errno_text(err));
  }
  watch(epoll_, wake_fd_, EPOLLIN, kWakeKey, EPOLL_CTL_ADD);
  thread_ = std::thread([this] { run(); });
}

void AddressExchange::stop() {
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
}

AddressExchange::~AddressExchange() {
  stop();
  for (auto& [token, f] : fetches_)
    if (f.fd >= 0) ::close(f.fd);
  for (int fd : {listen_fd_, epoll_, wake_fd_})
    if (fd >= 0) ::close(fd);
}

void AddressExchange::wake() {
  uint64_t one = 1;
  ssize_t r = ::write(wake_fd_, &one, sizeof one);
  (void)r;
}

int AddressExchange::listen(const std::string& host, int port, const std::string& where) {
  int fd = plugin::tcp::listen_socket(host, port, where);
  int bound = plugin::tcp::bound_port(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    listen_fd_ = fd;
  }
  watch(epoll_, fd, EPOLLIN, kListenKey, EPOLL_CTL_ADD);
  return bound;
}

void AddressExchange::fetch(uint64_t token, const sockaddr_storage& target, socklen_t target_len,
                            int delay_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Fetch& f = fetches_[token];
    f.token = token;
    f.target = target;
    f.target_len = target_len;
    f.start = Clock::now() + std::chrono::milliseconds(delay_ms);
    f.deadline = f.start + kFetchTimeout;
  }
  wake();
}

void AddressExchange::set_worker_address(std::string address) {
  std::lock_guard<std::mutex> lock(mu_);
  worker_address_ = std::move(address);
}

void AddressExchange::cancel(uint64_t token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fetches_.find(token);
  if (it == fetches_.end()) return;
  if (it->second.fd >= 0) ::close(it->second.fd);
  fetches_.erase(it);
}

void AddressExchange::begin(Fetch& f) {
  f.fd = ::socket(f.target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (f.fd < 0) return;
  if (::connect(f.fd, reinterpret_cast<const sockaddr*>(&f.target), f.target_len) != 0 &&
      errno != EINPROGRESS) {
    ::close(f.fd);
    f.fd = -1;
    return;
  }
  watch(epoll_, f.fd, EPOLLIN | EPOLLOUT, kFirstFetchKey + f.token, EPOLL_CTL_ADD);
}

bool AddressExchange::step(Fetch& f, bool ready, std::string* why) {
  if (f.fd < 0) return *why = "connect: " + errno_text(errno), true;
  if (!ready) {
    if (Clock::now() < f.deadline) return false;
    return *why = "no UCX address within " + std::to_string(kFetchTimeout.count()) + " s", true;
  }
  if (!f.connected) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return *why = errno_text(err), true;
    f.connected = true;
    watch(epoll_, f.fd, EPOLLIN, kFirstFetchKey + f.token, EPOLL_CTL_MOD);
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n > 0) {
      f.got.append(buf, static_cast<size_t>(n));
      continue;
    }
    uint32_t want = 0;
    if (f.got.size() >= sizeof want) std::memcpy(&want, f.got.data(), sizeof want);
    bool whole = f.got.size() >= sizeof want && f.got.size() == sizeof want + want && want > 0;
    if (n == 0) return *why = whole ? "" : "the peer closed before sending its UCX address", true;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return *why = errno_text(errno), true;
    if (whole) return why->clear(), true;
    if (Clock::now() >= f.deadline)
      return *why = "no UCX address within " + std::to_string(kFetchTimeout.count()) + " s", true;
    return false;
  }
}

void AddressExchange::answer(int listen_fd) {
  uint32_t len = static_cast<uint32_t>(worker_address_.size());
  std::string message(reinterpret_cast<const char*>(&len), sizeof len);
  message += worker_address_;
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = ::send(fd, message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == static_cast<ssize_t>(message.size()))
      ++answered_;
    else
      host_.log(CARAVAN_LOG_WARNING, "could not hand a peer this node's UCX address: " +
                                         (n < 0 ? errno_text(errno) : std::string("cut short")));
    ::close(fd);  // the peer reads to the end
  }
}

void AddressExchange::run() {
  pthread_setname_np(pthread_self(), "cv-ucx-address");
  std::vector<std::pair<uint64_t, std::string>> ended;  // token, why (empty: ok)
  std::vector<std::string> texts;
  std::unordered_set<uint64_t> ready;  // fetches whose socket epoll reported
  while (!stop_) {
    int timeout = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto now = Clock::now();
      for (auto& [token, f] : fetches_) {
        auto when = f.fd < 0 && !f.connected ? f.start : f.deadline;
        long long ms = std::max<long long>(
            0, std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
        if (timeout < 0 || ms < timeout) timeout = static_cast<int>(ms);
      }
    }
    epoll_event events[16];
    int n = epoll_wait(epoll_, events, 16, timeout);
    bool accept_now = false;
    ready.clear();
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeKey) {
        uint64_t count;
        ssize_t r = ::read(wake_fd_, &count, sizeof count);
        (void)r;
      } else if (events[i].data.u64 == kListenKey) {
        accept_now = true;
      } else {
        ready.insert(events[i].data.u64 - kFirstFetchKey);
      }
    }
    ended.clear();
    texts.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (accept_now && listen_fd_ >= 0) answer(listen_fd_);
      auto now = Clock::now();
      for (auto it = fetches_.begin(); it != fetches_.end();) {
        Fetch& f = it->second;
        std::string why;
        bool over = false;
        if (f.fd < 0 && !f.connected) {
          if (f.start > now) {
            ++it;
            continue;
          }
          begin(f);
          if (f.fd < 0) over = step(f, true, &why);
        } else {
          over = step(f, ready.count(f.token) > 0, &why);
        }
        if (!over) {
          ++it;
          continue;
        }
        if (f.fd >= 0) ::close(f.fd);
        ended.emplace_back(f.token, why);
        texts.push_back(why.empty() ? f.got.substr(sizeof(uint32_t)) : why);
        it = fetches_.erase(it);
      }
    }
    for (size_t i = 0; i < ended.size() && !stop_; ++i)
      fetched_(ended[i].first, ended[i].second.empty(), texts[i]);
  }
}

}  // namespace caravan::van_ucx
