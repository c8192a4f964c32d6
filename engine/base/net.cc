#include "engine/base/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/base/error.h"

namespace caravan::net {

long long now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::vector<std::string> list_interfaces() {
  std::vector<std::string> out;
  struct ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (auto* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    out.push_back(std::string(i->ifa_name) + "=" + buf);
  }
  freeifaddrs(ifs);
  return out;
}

std::string advertised_host(const std::string& node_host, const std::string& interface) {
  if (!node_host.empty()) return node_host;
  std::string first_up;
  std::string named;
  struct ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) throw Error(CARAVAN_ERR_CONFIG, "getifaddrs failed");
  for (auto* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
    // Exact match: ps-lite's prefix match picked eth10 for eth1.
    if (!interface.empty() && interface == i->ifa_name && named.empty()) named = buf;
    bool up = (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK);
    if (up && first_up.empty()) first_up = buf;
  }
  freeifaddrs(ifs);
  if (!interface.empty()) {
    if (!named.empty()) return named;
    std::string known;
    for (auto& s : list_interfaces()) known += (known.empty() ? "" : ", ") + s;
    throw config_error("DMLC_INTERFACE='" + interface +
                       "' names no interface with an IPv4 address (interfaces: " + known + ")");
  }
  return first_up.empty() ? "127.0.0.1" : first_up;
}

namespace {

bool resolve(const std::string& host, int port, sockaddr_storage* out, socklen_t* len,
             std::string* err) {
  struct addrinfo hints;
  std::memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0 || !res) {
    *err = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return false;
  }
  std::memcpy(out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

int local_port(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

int listen_tcp(const std::string& host, int port, int* bound_port) {
  sockaddr_storage addr;
  socklen_t len = 0;
  std::string err;
  if (!resolve(host, port, &addr, &len, &err)) throw config_error(err);
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(CARAVAN_ERR_TRANSPORT, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 1024) != 0) {
    int e = errno;
    close(fd);
    throw Error(CARAVAN_ERR_CONFIG,
                "cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(e));
  }
  *bound_port = local_port(fd);
  return fd;
}

int adopt_listener(const char* var, int fd, int port) {
  std::string what = std::string(var) + "=" + std::to_string(fd);
  int flags = fcntl(fd, F_GETFD);
  if (flags < 0)
    throw config_error(what +
                       " names no open file descriptor of this process: it is set only by "
                       "caravan-launch, for the scheduler it starts");
  int listening = 0;
  socklen_t n = sizeof listening;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &n) != 0 || !listening)
    throw config_error(what + " is no listening socket");
  int bound_port = local_port(fd);
  if (bound_port != port)
    throw config_error(what + " listens on port " + std::to_string(bound_port) +
                       ", not on DMLC_PS_ROOT_PORT=" + std::to_string(port));
  fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  return fd;
}

int connect_tcp(const std::string& host, int port, long long deadline_ms, std::string* last_error) {
  long long backoff = 20;
  for (;;) {
    sockaddr_storage addr;
    socklen_t len = 0;
    if (resolve(host, port, &addr, &len, last_error)) {
      int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        *last_error = std::string("socket: ") + std::strerror(errno);
        return -1;
      }
      int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
      if (rc != 0 && errno == EINPROGRESS) {
        struct pollfd p = {fd, POLLOUT, 0};
        long long left = deadline_ms - now_ms();
        rc = poll(&p, 1, static_cast<int>(left > 0 ? left : 0)) == 1 ? 0 : -1;
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (rc == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        if (rc != 0) soerr = ETIMEDOUT;
        if (soerr != 0) {
          errno = soerr;
          rc = -1;
        }
      }
      if (rc == 0) {
        int flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      *last_error = std::strerror(errno);
      close(fd);
    }
    // The scheduler may simply not be up yet: retry with backoff.
    long long left = deadline_ms - now_ms();
    if (left <= 0) return -1;
    struct timespec ts = {0, static_cast<long>(std::min(backoff, left)) * 1000000L};
    nanosleep(&ts, nullptr);
    backoff = std::min(backoff * 2, 500LL);
  }
}

std::string peer_name(int fd) {
  sockaddr_storage a;
  socklen_t len = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "unknown";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "unknown";
  return std::string(host) + ":" + serv;
}

}  // namespace caravan::net
