#include "engine/control/control_hub.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/base/log.h"
#include "engine/base/net.h"

namespace caravan {

ControlHub::ControlHub(MessageHandler on_message, CloseHandler on_close)
    : on_message_(std::move(on_message)), on_close_(std::move(on_close)) {
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
}

ControlHub::~ControlHub() {
  stop();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

int ControlHub::listen(const std::string& host, int port) {
  int bound = 0;
  listen_fd_ = net::listen_tcp(host, port, &bound);
  return bound;
}

int ControlHub::adopt(int fd) {
  auto c = std::make_shared<Conn>();
  c->fd = fd;
  c->peer = net::peer_name(fd);
  std::lock_guard<std::mutex> lock(mu_);
  int id = next_id_++;
  conns_[id] = c;
  wake();
  return id;
}

void ControlHub::start() { thread_ = std::thread([this] { loop(); }); }

void ControlHub::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, c] : conns_) ::close(c->fd);
  conns_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void ControlHub::wake() {
  char b = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], &b, 1);
}

bool ControlHub::send(int conn, wire::Header head, const std::vector<uint8_t>& body) {
  std::shared_ptr<Conn> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(conn);
    if (it == conns_.end()) return false;
    c = it->second;
  }
  head.seg_len[0] = body.size();
  uint8_t hdr[wire::kHeaderBytes];
  wire::encode(head, hdr);
  CARAVAN_VLOG(2) << "control: send type " << static_cast<int>(head.type) << " to " << c->peer;
  std::lock_guard<std::mutex> wl(c->write_mu);
  for (auto [p, n] : {std::pair<const uint8_t*, size_t>{hdr, sizeof hdr},
                      std::pair<const uint8_t*, size_t>{body.data(), body.size()}}) {
    while (n > 0) {
      ssize_t w = ::send(c->fd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  return true;
}

void ControlHub::close(int conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  ::shutdown(it->second->fd, SHUT_RDWR);
  ::close(it->second->fd);
  conns_.erase(it);
  wake();
}

std::string ControlHub::peer(int conn) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(conn);
  return it == conns_.end() ? "closed connection" : it->second->peer;
}

size_t ControlHub::connection_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return conns_.size();
}

void ControlHub::accept_one() {
  int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return;
  int id = adopt(fd);
  CARAVAN_VLOG(1) << "control: connection " << id << " from " << peer(id);
}

bool ControlHub::read_from(int id, Conn& c, std::string* why) {
  uint8_t buf[65536];
  ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0) {
    *why = "connection closed by peer";
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return true;
    *why = std::string("read failed: ") + std::strerror(errno);
    return false;
  }
  c.in.insert(c.in.end(), buf, buf + n);
  while (c.in.size() >= wire::kHeaderBytes) {
    wire::Header h;
    std::string bad;
    if (!wire::decode(c.in.data(), wire::kHeaderBytes, kMaxBody, &h, &bad)) {
      // A byte stream cannot be resynchronised after a bad header.
      *why = "malformed message: " + bad;
      return false;
    }
    size_t total = wire::kHeaderBytes + h.seg_len[0];
    if (c.in.size() < total) break;
    std::vector<uint8_t> body(c.in.begin() + wire::kHeaderBytes, c.in.begin() + total);
    c.in.erase(c.in.begin(), c.in.begin() + total);
    on_message_(id, h, std::move(body));
  }
  return true;
}

void ControlHub::loop() {
  std::vector<pollfd> fds;
  std::vector<int> ids;
  for (;;) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    ids.push_back(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      if (listen_fd_ >= 0) {
        fds.push_back({listen_fd_, POLLIN, 0});
        ids.push_back(-1);
      }
      for (auto& [id, c] : conns_) {
        fds.push_back({c->fd, POLLIN, 0});
        ids.push_back(id);
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      if (ids[i] == 0) {
        char drain[64];
        while (::read(wake_pipe_[0], drain, sizeof drain) > 0) {
        }
      } else if (ids[i] == -1) {
        accept_one();
      } else {
        std::shared_ptr<Conn> c;
        {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = conns_.find(ids[i]);
          if (it == conns_.end()) continue;
          c = it->second;
        }
        std::string why;
        if (!read_from(ids[i], *c, &why)) {
          bool known;
          {
            std::lock_guard<std::mutex> lock(mu_);
            known = conns_.erase(ids[i]) > 0;
          }
          if (known) {
            ::close(c->fd);
            if (why.rfind("malformed", 0) == 0) {
              CARAVAN_LOG(WARNING) << "control: dropping connection from " << c->peer << ": "
                                   << why;
            }
            on_close_(ids[i], why);
          }
        }
      }
    }
  }
}

}  // namespace caravan
