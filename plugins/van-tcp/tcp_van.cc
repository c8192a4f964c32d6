#include "tcp_van.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>

#include "events/send_checks.h"
#include "events/tsan.h"
#include "params.h"
#include "tcp/peer_links.h"
#include "tcp/tcp_address.h"

namespace caravan::van_tcp {
namespace {

// sendmsg, with its reads of the caller's memory hidden from ThreadSanitizer.
// The kernel has copied every byte sendmsg takes before the peer can see it,
// so a peer's answer proves the memory is free again: the engine lends a
// tensor's values for their sum while, to it, their push may still be in
// flight, and the conformance kit frees a buffer once its peer received it.
// ThreadSanitizer cannot see that order through a socket and would report
// each of these as a race. AddressSanitizer still checks what is sent.
ssize_t send_message(int fd, const msghdr* msg, int flags) {
#ifdef CARAVAN_TSAN
  __tsan_ignore_thread_begin();
  ssize_t n = ::sendmsg(fd, msg, flags);
  int saved = errno;
  __tsan_ignore_thread_end();
  errno = saved;
  return n;
#else
  return ::sendmsg(fd, msg, flags);
#endif
}

using plugin::Error;
using Clock = std::chrono::steady_clock;

std::string errno_text(int err) { return std::strerror(err); }

// How long a link that could not connect yet waits before trying again (libzmq's
// reconnect interval is the same).
constexpr int kRetryMs = 100;

std::string peer_text(const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = "unknown";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    port = ntohs(a->sin6_port);
  }
  return plugin::tcp::endpoint(ip, std::to_string(port));
}

// Takes an eventfd's count, so it stops reading as ready.
void drain(int eventfd) {
  uint64_t count;
  ssize_t r = ::read(eventfd, &count, sizeof count);
  (void)r;
}

void set_option(int fd, int level, int option, int value) {
  setsockopt(fd, level, option, &value, sizeof value);
}

}  // namespace

TcpVan::Call::Call(TcpVan& van) : van_(van) {
  std::lock_guard<std::mutex> lock(van_.mu_);
  if (van_.closing_) throw Error(CARAVAN_STATUS_CLOSED, "van is closing");
  ++van_.calls_;
}

TcpVan::Call::~Call() {
  std::lock_guard<std::mutex> lock(van_.mu_);
  if (--van_.calls_ == 0) van_.calls_cv_.notify_all();
}

TcpVan::TcpVan(const caravan_host_v1* host) : host_(host) {
  max_message_bytes_ = static_cast<size_t>(params::kMaxMessageBytes.integer(host_));
  sndbuf_ = plugin::tcp::send_buffer_setting(host_, params::kSndBuf);
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  write_epoll_ = epoll_create1(EPOLL_CLOEXEC);
  write_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_ < 0 || wake_fd_ < 0 || write_epoll_ < 0 || write_wake_fd_ < 0) {
    int err = errno;
    for (int fd : {epoll_, wake_fd_, write_epoll_, write_wake_fd_})
      if (fd >= 0) ::close(fd);
    throw Error(CARAVAN_STATUS_UNAVAILABLE, "epoll or eventfd: " + errno_text(err));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeKey;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_fd_, &ev);
  epoll_ctl(write_epoll_, EPOLL_CTL_ADD, write_wake_fd_, &ev);
  writer_ = std::thread([this] { write_loop(); });
}

// Sends not yet reported are dropped unreported and received messages not
// yet released freed, as van_v2.h's finalize says.
TcpVan::~TcpVan() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    closing_ = true;
    wake();  // a poll() asleep in epoll_wait returns CLOSED
    calls_cv_.wait(lock, [&] { return calls_ == 0; });
  }
  stop_writer_ = true;
  wake_writer();
  writer_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (auto& entry : links_) {
    std::lock_guard<std::mutex> lock(entry.second->mu);
    if (entry.second->fd >= 0) ::close(entry.second->fd);
    entry.second->fd = -1;
  }
  inbound_.clear();
  for (int fd : {epoll_, wake_fd_, write_epoll_, write_wake_fd_}) ::close(fd);
}

void TcpVan::properties(caravan_van_properties_v2* out) const {
  out->caps = CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND;
  out->max_message_bytes = max_message_bytes_ ? max_message_bytes_ : SIZE_MAX;
  out->max_segments = CARAVAN_VAN_MAX_SEGMENTS_V2;
  out->transport = "tcp";
}

void TcpVan::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  Call call(*this);
  // Not a structured binding: the lambdas below capture `where` (C++17
  // captures no structured binding).
  const plugin::tcp::ListenRequest checked = plugin::tcp::check_listen(host, port, addr_out);
  const std::string& name = checked.host;
  const std::string& where = checked.where;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (listened_)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen on " + where + ": already listening");
    listened_ = true;  // claimed now so a racing second call fails
  }
  auto fail = [&](int fd, const std::string& why) {
    if (fd >= 0) ::close(fd);
    std::lock_guard<std::mutex> lock(mu_);
    listened_ = false;
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on " + where + ": " + why);
  };
  int fd = -1;
  try {
    fd = plugin::tcp::listen_socket(name, port, where);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    listened_ = false;
    throw;
  }
  // Advertise the name the engine gave (it may be a host name) with the
  // port actually bound.
  std::string advertised = plugin::tcp::endpoint(name, std::to_string(plugin::tcp::bound_port(fd)));
  if (advertised.size() + 1 > addr_cap) fail(fd, "address buffer too small for " + advertised);
  std::memcpy(addr_out, advertised.c_str(), advertised.size() + 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    listen_fd_ = fd;
    own_host_ = name;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenKey;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  host_.log(CARAVAN_LOG_DEBUG, "listening on " + advertised);
}

std::string TcpVan::own_host() {
  std::lock_guard<std::mutex> lock(mu_);
  return own_host_;
}

void TcpVan::connect(uint64_t peer, const char* address) {
  Call call(*this);
  std::string who = "peer " + std::to_string(peer);
  std::string host, port;
  plugin::tcp::split_peer_endpoint(peer, address, "tcp", &host, &port);
  {
    std::shared_lock<std::shared_mutex> lock(links_mu_);
    auto it = links_.find(peer);
    if (it != links_.end())
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + " at " + address +
                                                       ": already connected (to " +
                                                       it->second->address + ")");
  }
  auto link = std::make_shared<Link>();
  link->peer = peer;
  link->address = address;
  std::string why;
  if (!plugin::tcp::resolve_stream(host, port, false, &link->target, &link->target_len, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "connect " + who + " at " + address + ": " + why);
  link->key = next_key_++;
  {
    std::unique_lock<std::shared_mutex> lock(links_mu_);
    if (!links_.emplace(peer, link).second)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "connect " + who + " at " + address + ": already connected");
    link_keys_.emplace(link->key, link);
  }
  std::lock_guard<std::mutex> lock(link->mu);
  start_connect(*link, link);
}

void TcpVan::start_connect(Link& link, const std::shared_ptr<Link>& self) {
  int fd = ::socket(link.target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return retry_later(link, self, errno);
  // Messages are whole when handed over: nothing is gained by holding back
  // the tail of one for the next.
  set_option(fd, IPPROTO_TCP, TCP_NODELAY, 1);
  if (int bytes = plugin::tcp::send_buffer_for(link.address, own_host(), sndbuf_))
    set_option(fd, SOL_SOCKET, SO_SNDBUF, bytes);
  int started = ::connect(fd, reinterpret_cast<const sockaddr*>(&link.target), link.target_len);
  if (started != 0 && errno != EINPROGRESS) {
    int err = errno;
    ::close(fd);
    return retry_later(link, self, err);
  }
  link.fd = fd;
  link.connecting = started != 0;
  link.ever_connected = !link.connecting;
  link.watched = link.connecting || !link.queue.empty();  // writability: connected, or room
  epoll_event ev{};
  ev.events = link.watched ? uint32_t{EPOLLOUT} : 0u;
  ev.data.u64 = link.key;
  epoll_ctl(write_epoll_, EPOLL_CTL_ADD, fd, &ev);
}

void TcpVan::retry_later(Link& link, const std::shared_ptr<Link>& self, int err) {
  if (link.fd >= 0) {
    epoll_ctl(write_epoll_, EPOLL_CTL_DEL, link.fd, nullptr);
    ::close(link.fd);
    link.fd = -1;
  }
  link.connecting = true;
  link.watched = false;
  if (link.closed) return;
  host_.log(CARAVAN_LOG_DEBUG, "connecting to peer " + std::to_string(link.peer) + " at " +
                                   link.address + ": " + errno_text(err) + "; trying again in " +
                                   std::to_string(kRetryMs) + " ms");
  {
    std::lock_guard<std::mutex> lock(retry_mu_);
    retry_.emplace_back(Clock::now() + std::chrono::milliseconds(kRetryMs), self);
  }
  if (std::this_thread::get_id() != writer_.get_id())
    wake_writer();  // its wait may be too long now
}

int TcpVan::retry_due() {
  std::vector<std::shared_ptr<Link>> due;
  int next = -1;
  {
    std::lock_guard<std::mutex> lock(retry_mu_);
    auto now = Clock::now();
    for (size_t i = 0; i < retry_.size();) {
      if (retry_[i].first <= now) {
        if (auto l = retry_[i].second.lock()) due.push_back(std::move(l));
        retry_[i] = std::move(retry_.back());
        retry_.pop_back();
        continue;
      }
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(retry_[i].first - now).count();
      if (next < 0 || ms < next) next = static_cast<int>(ms);
      ++i;
    }
  }
  for (auto& link : due) {
    std::lock_guard<std::mutex> lock(link->mu);
    if (!link->closed && link->fd < 0) start_connect(*link, link);
  }
  return due.empty() ? next : 0;  // a new try may have scheduled another
}

void TcpVan::disconnect(uint64_t peer) {
  Call call(*this);
  std::shared_ptr<Link> link;
  {
    std::unique_lock<std::shared_mutex> lock(links_mu_);
    link = plugin::tcp::take_link(links_, peer);
    link_keys_.erase(link->key);
  }
  std::lock_guard<std::mutex> lock(link->mu);
  if (link->fd >= 0) {
    epoll_ctl(write_epoll_, EPOLL_CTL_DEL, link->fd, nullptr);
    ::close(link->fd);
    link->fd = -1;
  }
  link->closed = true;
  link->failed = "disconnected";
  fail_queue(*link, CARAVAN_STATUS_CLOSED);
}

// Writes at once what the socket takes. The slot travels in the frame, for
// the receiver's lends.
void TcpVan::send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                  size_t num_segments, uint64_t send_id) {
  Call call(*this);
  auto who = [&] { return "send to peer " + std::to_string(peer); };
  size_t total = plugin::checked_send_bytes(segments, num_segments, who());
  Outgoing out;
  out.send_id = send_id;
  FrameHead head{kFrameMagic, static_cast<uint32_t>(num_segments), slot};
  std::memcpy(out.head, &head, sizeof head);
  for (size_t i = 0; i < num_segments; ++i) {
    uint64_t len = segments[i].len;
    std::memcpy(out.head + sizeof head + i * sizeof len, &len, sizeof len);
    out.iov[1 + i] = {const_cast<void*>(segments[i].data), segments[i].len};
  }
  if (max_message_bytes_ && total > max_message_bytes_)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                who() + ": " + std::to_string(total) +
                    " bytes exceed MAX_MESSAGE_BYTES=" + std::to_string(max_message_bytes_));
  out.iov[0] = {out.head, sizeof head + num_segments * sizeof(uint64_t)};
  out.count = 1 + num_segments;

  std::shared_ptr<Link> link;
  {
    std::shared_lock<std::shared_mutex> lock(links_mu_);
    auto it = links_.find(peer);
    if (it != links_.end()) link = it->second;
  }
  if (!link) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who() + ": not connected");
  std::lock_guard<std::mutex> lock(link->mu);
  if (!link->failed.empty())
    throw Error(
        link->fd < 0 && link->failed == "disconnected" ? CARAVAN_STATUS_CLOSED : CARAVAN_STATUS_IO,
        who() + " at " + link->address + ": " + link->failed);
  link->queue.push_back(out);
  // iov[0] must point at the queued copy's header, not this frame's.
  Outgoing& queued = link->queue.back();
  queued.iov[0].iov_base = queued.head;
  if (!link->connecting && link->queue.size() == 1) flush(*link);
}

void TcpVan::flush(Link& link) {
  while (!link.queue.empty()) {
    Outgoing& o = link.queue.front();
    msghdr msg{};
    msg.msg_iov = o.iov + o.first;
    msg.msg_iovlen = o.count - o.first;
    ssize_t n = send_message(link.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      link.failed = "connection to " + link.address + " failed: " + errno_text(errno);
      host_.log(CARAVAN_LOG_WARNING, "peer " + std::to_string(link.peer) + ": " + link.failed);
      epoll_ctl(write_epoll_, EPOLL_CTL_DEL, link.fd, nullptr);
      link.watched = false;
      fail_queue(link, CARAVAN_STATUS_IO);
      return;
    }
    size_t left = static_cast<size_t>(n);
    while (o.first < o.count && left >= o.iov[o.first].iov_len) {
      left -= o.iov[o.first].iov_len;
      ++o.first;
    }
    if (o.first < o.count) {
      o.iov[o.first].iov_base = static_cast<char*>(o.iov[o.first].iov_base) + left;
      o.iov[o.first].iov_len -= left;
      continue;  // the kernel took part: try the rest, which may now say EAGAIN
    }
    uint64_t id = o.send_id;
    link.queue.pop_front();
    sent(id, CARAVAN_STATUS_OK);
  }
  watch_writable(link, !link.queue.empty());
}

void TcpVan::fail_queue(Link& link, caravan_status status) {
  for (const Outgoing& o : link.queue) sent(o.send_id, status);
  link.queue.clear();
}

void TcpVan::watch_writable(Link& link, bool on) {
  if (link.watched == on || link.fd < 0) return;
  epoll_event ev{};
  ev.events = on ? uint32_t{EPOLLOUT} : 0u;
  ev.data.u64 = link.key;
  epoll_ctl(write_epoll_, EPOLL_CTL_MOD, link.fd, &ev);
  link.watched = on;
}

void TcpVan::sent(uint64_t send_id, caravan_status status) {
  // The poller collects the event itself when it is the one writing; any
  // other thread wakes it, once per batch of events.
  if (sent_.push(send_id, status) && std::this_thread::get_id() != poller_.load()) wake();
}

void TcpVan::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter already wakes the poller
}

std::shared_ptr<Link> TcpVan::find_link(uint64_t key) {
  std::shared_lock<std::shared_mutex> lock(links_mu_);
  auto it = link_keys_.find(key);
  return it == link_keys_.end() ? nullptr : it->second;
}

void TcpVan::accept_all() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        host_.log(CARAVAN_LOG_ERROR, "accepting a connection: " + errno_text(errno));
      return;
    }
    uint64_t key = next_key_++;
    auto in = std::make_unique<Inbound>(fd, peer_text(addr), max_message_bytes_, lending_);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    inbound_.emplace(key, std::move(in));
  }
}

void TcpVan::close_inbound(std::unordered_map<uint64_t, std::unique_ptr<Inbound>>::iterator it) {
  epoll_ctl(epoll_, EPOLL_CTL_DEL, it->second->fd(), nullptr);
  inbound_.erase(it);
}

void TcpVan::read_inbound(uint64_t key) {
  auto it = inbound_.find(key);
  if (it == inbound_.end()) return;
  std::vector<std::unique_ptr<Received>> done;
  std::string why;
  size_t dropped = it->second->dropped();
  Inbound::State s = it->second->read_available(&done, &why);
  for (auto& r : done) received_.push_back(std::move(r));
  if (it->second->dropped() > dropped) log_dropped(it->second->peer());
  if (s == Inbound::State::kMalformed)
    host_.log(CARAVAN_LOG_WARNING,
              "dropped the connection from " + it->second->peer() + ": it sent " + why);
  if (s != Inbound::State::kOpen) close_inbound(it);
}

void TcpVan::link_ready(uint64_t key, uint32_t events) {
  std::shared_ptr<Link> link = find_link(key);
  if (!link) return;
  std::lock_guard<std::mutex> lock(link->mu);
  if (link->fd < 0 || !link->failed.empty()) return;
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(link->fd, SOL_SOCKET, SO_ERROR, &err, &len);
  // A hang-up without a pending error is a broken connection all the same;
  // left registered it would be reported again at once, forever.
  if (!err && (events & EPOLLHUP)) err = ECONNRESET;
  if (err && !link->ever_connected) return retry_later(*link, link, err);
  if (err) {
    link->failed = "connection to " + link->address + " failed: " + errno_text(err);
    host_.log(CARAVAN_LOG_WARNING, "peer " + std::to_string(link->peer) + ": " + link->failed);
    epoll_ctl(write_epoll_, EPOLL_CTL_DEL, link->fd, nullptr);
    link->watched = false;
    fail_queue(*link, CARAVAN_STATUS_IO);
    return;
  }
  link->connecting = false;
  link->ever_connected = true;
  flush(*link);
}

size_t TcpVan::take_received(caravan_van_event_v2* events, size_t capacity) {
  size_t n = 0;
  while (n < capacity && !received_.empty()) {
    std::unique_ptr<Received> r = std::move(received_.front());
    received_.pop_front();
    caravan_van_event_v2& e = events[n];
    std::memset(&e, 0, sizeof e);
    e.type = CARAVAN_VAN_EVENT_RECEIVED;
    e.message.num_segments = r->num_segments;
    for (size_t i = 0; i < r->num_segments; ++i) {
      e.message.segments[i].data = r->memory + r->offsets[i];
      e.message.segments[i].len = static_cast<size_t>(r->lens[i]);
    }
    if (r->lend) {
      unsigned char* at = lending_.hand_out(r->slot, r->lend);
      if (!at) {
        log_dropped(r->peer);
        continue;
      }
      e.message.segments[r->lend->segment].data = at;
    }
    e.message.peer = r->peer.c_str();
    e.message.van_token = held_.hand_out(std::move(r));
    ++n;
  }
  return n;
}

void TcpVan::log_dropped(const std::string& peer) {
  host_.log(CARAVAN_LOG_WARNING,
            "dropped a message from " + peer +
                ": the memory lent for it was taken back (unlend) and no memory could be had to "
                "move it to");
}

caravan_status TcpVan::poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                            size_t* num_events) {
  Call call(*this);
  const bool forever = timeout_ms < 0;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(forever ? 0 : timeout_ms);
  auto remaining_ms = [&]() -> int {
    if (forever) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left > 0 ? static_cast<int>(std::min<long long>(left, INT_MAX)) : 0;
  };
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  poller_ = std::this_thread::get_id();
  size_t& n = *num_events;
  bool looked = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return CARAVAN_STATUS_CLOSED;
    }
    // Ends of sends first, so the engine frees a partition's credit
    // before it handles its answer.
    n = sent_.take(events, capacity);
    n += take_received(events + n, capacity - n);
    if (n > 0) return CARAVAN_STATUS_OK;
    if (interrupted_.exchange(false)) return CARAVAN_STATUS_TIMEOUT;
    int wait = remaining_ms();
    if (looked && wait == 0) return CARAVAN_STATUS_TIMEOUT;
    looked = true;
    epoll_event ready[64];
    int got = epoll_wait(epoll_, ready, 64, wait);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(CARAVAN_STATUS_IO, "poll: epoll_wait failed: " + errno_text(errno));
    }
    for (int i = 0; i < got; ++i) {
      uint64_t key = ready[i].data.u64;
      if (key == kWakeKey) {
        drain(wake_fd_);
      } else if (key == kListenKey) {
        accept_all();
      } else {
        read_inbound(key);
      }
    }
  }
}

void TcpVan::release(const caravan_van_message_v2* message) { held_.take_back(message); }

void TcpVan::lend(uint64_t slot, size_t segment, void* buf, size_t len) {
  Call call(*this);
  lending_.lend(slot, segment, buf, len);
}

void TcpVan::unlend(uint64_t slot) {
  Call call(*this);
  lending_.unlend(slot);
}

void TcpVan::write_loop() {
  pthread_setname_np(pthread_self(), "tcpvan-writer");  // for top -H and run.sh --cpu
  while (!stop_writer_) {
    int wait = retry_due();
    epoll_event ready[64];
    int got = epoll_wait(write_epoll_, ready, 64, wait);
    for (int i = 0; i < got; ++i) {
      uint64_t key = ready[i].data.u64;
      if (key == kWakeKey)
        drain(write_wake_fd_);
      else
        link_ready(key, ready[i].events);
    }
  }
}

void TcpVan::wake_writer() {
  uint64_t one = 1;
  ssize_t n = ::write(write_wake_fd_, &one, sizeof one);
  (void)n;
}

void TcpVan::interrupt() {
  interrupted_ = true;
  wake();
}

}  // namespace caravan::van_tcp
