#include "engine/control/control_hub.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <tuple>

#include "engine/base/log.h"
#include "engine/base/net.h"
#include "engine/base/thread_name.h"

namespace caravan {

ControlHub::ControlHub(ControlReceiver receiver, MessageHandler on_message, CloseHandler on_close)
    : receiver_(receiver), on_message_(std::move(on_message)), on_close_(std::move(on_close)) {
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
  c->connected = c->since = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  int id = next_id_++;
  conns_[id] = c;
  wake();
  return id;
}

void ControlHub::start() {
  thread_ = std::thread([this] { loop(); });
}

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
  head.seg_len[1] = head.seg_len[2] = 0;
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

void ControlHub::admit(int conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(conn);
  if (it != conns_.end()) it->second->admitted = true;
}

void ControlHub::hang_up(int conn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = conns_.find(conn);
    if (it == conns_.end() || it->second->hanging_up) return;
    Conn& c = *it->second;
    c.hanging_up = true;
    c.since = Clock::now();
    std::lock_guard<std::mutex> wl(c.write_mu);
    ::shutdown(c.fd, SHUT_WR);
  }
  wake();
}

void ControlHub::close(int conn) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  it->second->closed = true;
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    conns_[id]->accepted = true;
  }
  CARAVAN_VLOG(1) << "control: connection " << id << " from " << peer(id);
}

// Runs on the hub's thread, the only one that touches c.in, c.messages and
// c.since.
bool ControlHub::read_from(int id, Conn& c, std::string* why, bool* bad) {
  uint8_t buf[65536];
  ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  bool hanging_up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hanging_up = c.hanging_up;
  }
  if (hanging_up) {
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) return true;
    *why = "hung up";
    return false;
  }
  if (n == 0) {
    if (c.in.buffered() > 0) {
      *why = "connection closed in the middle of a message (" + c.in.describe_partial() + ")";
      *bad = true;
    } else {
      *why = "connection closed by peer";
    }
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return true;
    *why = std::string("read failed: ") + std::strerror(errno);
    return false;
  }
  if (c.in.buffered() == 0 && c.messages > 0) c.since = Clock::now();
  c.in.append(buf, static_cast<size_t>(n));
  for (;;) {
    wire::Header head;
    std::vector<uint8_t> body;
    std::string fault;
    switch (c.in.next(&head, &body, &fault)) {
      case FrameReader::Next::kNeedMore:
        return true;
      case FrameReader::Next::kMalformed:
        *why = "malformed message: " + fault;
        *bad = true;
        return false;
      case FrameReader::Next::kMessage:
        break;
    }
    ControlMessage msg;
    if (!parse_control_message(receiver_, head, body, &msg, &fault)) {
      *why = "malformed message: " + fault;
      *bad = true;
      return false;
    }
    ++c.messages;
    // What is left in the buffer arrived with this read.
    c.since = Clock::now();
    CARAVAN_VLOG(2) << "control: received type " << static_cast<int>(head.type) << " from "
                    << c.peer;
    on_message_(id, std::move(msg));
    std::lock_guard<std::mutex> lock(mu_);
    if (c.closed || c.hanging_up) return true;
  }
}

void ControlHub::drop(int id, Conn& c, const std::string& why, bool bad) {
  bool hung_up;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (conns_.erase(id) == 0) return;
    c.closed = true;
    hung_up = c.hanging_up;
  }
  ::close(c.fd);
  if (bad) {
    CARAVAN_LOG(WARNING) << "control: dropping the connection from " << c.peer << ": " << why;
  } else {
    CARAVAN_VLOG(1) << "control: connection from " << c.peer << " ended: " << why;
  }
  // The owner already gave up on a connection it hung up.
  if (!hung_up) on_close_(id, why);
}

int ControlHub::expire_stalled() {
  if (stall_limit_s_ <= 0) return -1;
  auto now = Clock::now();
  auto limit = std::chrono::seconds(stall_limit_s_);
  enum class Miss { kSilent, kMidMessage, kNotAdmitted, kNoHangUp };
  std::vector<std::tuple<int, std::shared_ptr<Conn>, Miss>> stalled;
  long long next_ms = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : conns_) {
      if (!c->accepted) continue;
      // The earliest of the deadlines that apply, and which one it is.
      std::optional<std::pair<Clock::time_point, Miss>> due;
      auto consider = [&](Clock::time_point at, Miss miss) {
        if (!due || at < due->first) due = {at, miss};
      };
      if (c->hanging_up) {
        consider(c->since + limit, Miss::kNoHangUp);
      } else {
        if (c->in.buffered() > 0)
          consider(c->since + limit, Miss::kMidMessage);
        else if (c->messages == 0)
          consider(c->since + limit, Miss::kSilent);
        if (!c->admitted) consider(c->connected + limit, Miss::kNotAdmitted);
      }
      if (!due) continue;
      if (now >= due->first) {
        stalled.emplace_back(id, c, due->second);
        continue;
      }
      long long ms = std::chrono::ceil<std::chrono::milliseconds>(due->first - now).count();
      if (next_ms < 0 || ms < next_ms) next_ms = ms;
    }
  }
  std::string seconds = std::to_string(stall_limit_s_) + " s";
  for (auto& [id, c, miss] : stalled) {
    switch (miss) {
      case Miss::kSilent:
        drop(id, *c, "sent no message within " + seconds + " of connecting", true);
        break;
      case Miss::kMidMessage:
        drop(id, *c,
             "stalled for " + seconds + " in the middle of a message (" + c->in.describe_partial() +
                 ")",
             true);
        break;
      case Miss::kNotAdmitted:
        drop(id, *c, "did not finish authenticating within " + seconds + " of connecting", true);
        break;
      case Miss::kNoHangUp:
        drop(id, *c, "did not hang up within " + seconds + " of being refused", false);
        break;
    }
  }
  return static_cast<int>(next_ms);
}

void ControlHub::loop() {
  name_this_thread("cv-control");
  std::vector<pollfd> fds;
  std::vector<int> ids;
  for (;;) {
    int timeout_ms = expire_stalled();
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
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
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
        bool bad = false;
        if (!read_from(ids[i], *c, &why, &bad)) drop(ids[i], *c, why, bad);
      }
    }
  }
}

}  // namespace caravan
