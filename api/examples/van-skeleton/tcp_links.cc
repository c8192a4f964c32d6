#include "tcp_links.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skeleton {

using caravan::plugin::Error;

namespace {

std::string errno_text() { return std::strerror(errno); }

// "tcp://host:port" or "tcp://[v6]:port" -> host, port.
void parse_address(const std::string& address, std::string* host, std::string* port) {
  const std::string scheme = "tcp://";
  auto colon = address.rfind(':');
  if (address.compare(0, scheme.size(), scheme) != 0 || colon == std::string::npos ||
      colon <= scheme.size())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "address '" + address + "' is not tcp://HOST:PORT");
  *host = address.substr(scheme.size(), colon - scheme.size());
  *port = address.substr(colon + 1);
  if (host->size() > 2 && host->front() == '[') *host = host->substr(1, host->size() - 2);
}

addrinfo* resolve(const std::string& host, const std::string& port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cannot resolve '" + host + "': " + gai_strerror(rc));
  return res;
}

std::string peer_text(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char ip[INET6_ADDRSTRLEN] = "unknown";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "unknown";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    port = ntohs(a->sin6_port);
  }
  return "tcp://" + std::string(ip) + ":" + std::to_string(port);
}

bool read_all(int fd, void* buf, size_t len) {
  auto* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

// Writes every iovec, resuming after partial writes.
bool write_all(int fd, iovec* iov, size_t count) {
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

}  // namespace

TcpLinks::TcpLinks(const caravan::plugin::Host& host, size_t max_message_bytes,
                   std::function<void(std::unique_ptr<Frame>)> on_frame)
    : host_(host), max_message_bytes_(max_message_bytes), on_frame_(std::move(on_frame)) {
  if (pipe(wake_) != 0) throw Error(CARAVAN_STATUS_IO, "pipe: " + errno_text());
  io_ = std::thread([this] { io_loop(); });
}

TcpLinks::~TcpLinks() {
  close();
  for (auto& [fd, peer] : conns_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  for (auto& [id, link] : links_) ::close(link->fd);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpLinks::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    for (auto& [fd, peer] : conns_) shutdown(fd, SHUT_RDWR);  // a frame being read ends
  }
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    for (auto& [id, link] : links_) {
      link->closed = true;
      shutdown(link->fd, SHUT_RDWR);  // a frame being written ends
    }
  }
  wake_io();
  io_.join();
}

void TcpLinks::listen(const char* host, int port, char* addr_out, size_t addr_cap) {
  if (!host || port < 0 || port > 65535)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on " +
                                                     std::string(host ? host : "(null)") +
                                                     " port " + std::to_string(port));
  addrinfo* res = resolve(host, std::to_string(port), true);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  bool bound = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
               bind(fd, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd, 128) == 0;
  freeaddrinfo(res);
  if (!bound) {
    std::string why = errno_text();
    if (fd >= 0) ::close(fd);
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on " + std::string(host) +
                                                     " port " + std::to_string(port) + ": " + why);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  int bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  std::string h = std::strchr(host, ':') ? "[" + std::string(host) + "]" : std::string(host);
  std::string addr = "tcp://" + h + ":" + std::to_string(bound_port);
  if (!addr_out || addr.size() + 1 > addr_cap) {
    ::close(fd);
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: no room for the address " + addr);
  }
  std::memcpy(addr_out, addr.c_str(), addr.size() + 1);
  std::lock_guard<std::mutex> lock(mu_);
  listen_fd_ = fd;
  wake_io();  // the I/O thread starts accepting on it
}

void TcpLinks::connect(uint64_t peer, const char* address) {
  std::string host, port;
  parse_address(address ? address : "", &host, &port);
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    if (links_.count(peer))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "peer " + std::to_string(peer) + " is already connected");
  }
  addrinfo* res = resolve(host, port, false);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // Connecting at once keeps the skeleton simple; a real van connects in the
  // background and queues sends meanwhile, as the ABI allows.
  bool up = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  freeaddrinfo(res);
  if (!up) {
    std::string why = errno_text();
    if (fd >= 0) ::close(fd);
    throw Error(CARAVAN_STATUS_IO,
                "cannot connect to peer " + std::to_string(peer) + " at " + address + ": " + why);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto link = std::make_shared<Link>();
  link->fd = fd;
  link->address = address;
  std::lock_guard<std::mutex> lock(links_mu_);
  links_[peer] = std::move(link);
}

void TcpLinks::disconnect(uint64_t peer) {
  std::shared_ptr<Link> link;
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    auto it = links_.find(peer);
    if (it == links_.end())
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "peer " + std::to_string(peer) + " is not connected");
    link = std::move(it->second);
    links_.erase(it);
  }
  link->closed = true;
  shutdown(link->fd, SHUT_RDWR);  // a write() to it gives up
  std::lock_guard<std::mutex> lock(link->mu);
  ::close(link->fd);
  link->fd = -1;
}

std::shared_ptr<Link> TcpLinks::link_of(uint64_t peer) {
  std::lock_guard<std::mutex> lock(links_mu_);
  auto it = links_.find(peer);
  if (it == links_.end())
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "send: peer " + std::to_string(peer) + " is not connected");
  return it->second;
}

void TcpLinks::write(uint64_t peer, const caravan_segment_v2* segments, size_t num_segments) {
  if (!segments || num_segments == 0 || num_segments > kMaxSegments)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "send: " + std::to_string(num_segments) +
                                                     " segments (1 to " +
                                                     std::to_string(kMaxSegments) + " allowed)");
  FrameHeader header{kFrameMagic, static_cast<uint32_t>(num_segments), {}};
  iovec iov[1 + kMaxSegments];
  iov[0] = {&header, sizeof header};
  size_t total = 0;
  for (size_t i = 0; i < num_segments; ++i) {
    header.lengths[i] = segments[i].len;
    total += segments[i].len;
    iov[1 + i] = {const_cast<void*>(segments[i].data), segments[i].len};
  }
  if (total > max_message_bytes_)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "send: " + std::to_string(total) +
                                                     " bytes exceed MAX_MESSAGE_BYTES " +
                                                     std::to_string(max_message_bytes_));
  std::shared_ptr<Link> link = link_of(peer);
  std::lock_guard<std::mutex> lock(link->mu);
  std::string to = "peer " + std::to_string(peer) + " at " + link->address;
  if (link->fd < 0 || link->closed)
    throw Error(CARAVAN_STATUS_CLOSED, "send: " + to + " was disconnected, or the van is closing");
  if (!link->broken.empty()) throw Error(CARAVAN_STATUS_IO, "send to " + to + ": " + link->broken);
  if (write_all(link->fd, iov, 1 + num_segments)) return;
  if (link->closed)
    throw Error(CARAVAN_STATUS_CLOSED,
                "send: " + to + " was disconnected while writing, or the van is closing");
  // Part of the frame may be on the stream: nothing more may follow it.
  link->broken = errno_text();
  shutdown(link->fd, SHUT_RDWR);
  throw Error(CARAVAN_STATUS_IO, "send to " + to + ": " + link->broken);
}

void TcpLinks::wake_io() {
  char byte = 0;
  (void)!::write(wake_[1], &byte, 1);
}

// Reads one whole frame from `fd` and hands it on. False when the peer went
// away or sent something that is not a frame (the stream cannot be resynced).
bool TcpLinks::read_frame(int fd, const std::string& peer) {
  FrameHeader h{};
  if (!read_all(fd, &h, sizeof h)) return false;
  uint64_t total = 0;
  bool sane = h.magic == kFrameMagic && h.num_segments >= 1 && h.num_segments <= kMaxSegments;
  for (uint32_t i = 0; sane && i < h.num_segments; ++i) total += h.lengths[i];
  if (!sane || total > max_message_bytes_) {
    host_.log(CARAVAN_LOG_WARNING, "dropping connection from " + peer + ": malformed frame");
    return false;
  }
  auto f = std::make_unique<Frame>();
  f->data.reset(new char[total ? total : 1]);
  f->peer = peer;
  f->num_segments = h.num_segments;
  std::memcpy(f->lengths, h.lengths, sizeof f->lengths);
  // A frame cut short (its sender disconnected or died) is never handed on.
  if (!read_all(fd, f->data.get(), total)) return false;
  on_frame_(std::move(f));
  return true;
}

void TcpLinks::io_loop() {
  for (;;) {
    std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}};
    std::vector<std::string> peers = {""};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return;
      if (listen_fd_ >= 0) {
        fds.push_back({listen_fd_, POLLIN, 0});
        peers.push_back("");
      }
      for (auto& [fd, peer] : conns_) {
        fds.push_back({fd, POLLIN, 0});
        peers.push_back(peer);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) {
      char buf[64];
      (void)!::read(wake_[0], buf, sizeof buf);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      std::unique_lock<std::mutex> lock(mu_);
      if (closing_) return;
      if (fds[i].fd == listen_fd_) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) conns_[fd] = peer_text(fd);
      } else {
        lock.unlock();  // reading may take a while; writes go on meanwhile
        bool alive = read_frame(fds[i].fd, peers[i]);
        lock.lock();
        if (!alive && !closing_) {
          ::close(fds[i].fd);
          conns_.erase(fds[i].fd);
        }
      }
    }
  }
}

}  // namespace skeleton
