// What the TCP vans (van-zmq, van-tcp, and van-ucx's address exchange)
// share about their addresses:
// "tcp://HOST:PORT" text, an IPv6 host in brackets, and the checks of
// listen()'s arguments that van_v2.h asks of every van.
#ifndef CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H
#define CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin::tcp {

// "SCHEME://HOST:PORT"; van-ucx advertises "ucx://" addresses of the same form.
inline std::string endpoint(const std::string& host, const std::string& port,
                            const std::string& scheme = "tcp") {
  bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + port;
}

// endpoint()'s text back into host (without brackets) and port; false when
// it is not SCHEME://HOST:PORT with a numeric port.
inline bool split_endpoint(const std::string& address, const std::string& scheme, std::string* host,
                           std::string* port) {
  std::string prefix = scheme + "://";
  if (address.rfind(prefix, 0) != 0) return false;
  std::string rest = address.substr(prefix.size());
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 == rest.size()) return false;
  *host = rest.substr(0, colon);
  *port = rest.substr(colon + 1);
  if (host->size() > 1 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  return !host->empty() && port->find_first_not_of("0123456789") == std::string::npos;
}

// connect()'s check of `address` for `peer`, as van_v2.h asks it of every
// van: SCHEME://HOST:PORT into host and port, or INVALID_ARGUMENT naming
// the peer.
inline void split_peer_endpoint(uint64_t peer, const char* address, const std::string& scheme,
                                std::string* host, std::string* port) {
  std::string who = "connect peer " + std::to_string(peer);
  if (!address || !*address)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, who + ": address missing");
  if (!split_endpoint(address, scheme, host, port))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                who + ": '" + address + "' is not " + scheme + "://HOST:PORT");
}

// The first address getaddrinfo gives for a TCP stream to host:port
// (passive: to listen on, host "*" for any) into *addr; false, with
// getaddrinfo's reason in *why, when there is none.
inline bool resolve_stream(const std::string& host, const std::string& port, bool passive,
                           sockaddr_storage* addr, socklen_t* len, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const char* name = passive && host == "*" ? nullptr : host.c_str();
  int rc = getaddrinfo(name, port.c_str(), &hints, &res);
  if (rc != 0 || !res) return *why = gai_strerror(rc), false;
  std::memcpy(addr, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

// A non-blocking socket bound to host:port (SO_REUSEADDR) and listening.
// Throws INVALID_ARGUMENT "cannot listen on <where>: <why>".
inline int listen_socket(const std::string& host, int port, const std::string& where) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string why;
  if (!resolve_stream(host, std::to_string(port), true, &addr, &len, &why))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on " + where + ": " + why);
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int err = errno;
  if (fd >= 0) {
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
        ::listen(fd, SOMAXCONN) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  }
  if (fd < 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cannot listen on " + where + ": " + std::strerror(err));
  return fd;
}

// The port a socket is bound to (listen_socket with port 0: the one the
// kernel chose).
inline int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

// listen()'s host and port, checked: the host without IPv6 brackets, and
// both named for messages ("host 'h1' port 9000"). Throws INVALID_ARGUMENT.
struct ListenRequest {
  std::string host;
  std::string where;
};

inline ListenRequest check_listen(const char* host, int port, const char* addr_out) {
  if (!host || !*host || !addr_out)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "listen: host or address buffer missing");
  ListenRequest r{host, ""};
  if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']')
    r.host = r.host.substr(1, r.host.size() - 2);
  r.where = "host '" + r.host + "' port " + std::to_string(port);
  if (port < 0 || port > 65535)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "cannot listen on " + r.where + ": port out of range");
  return r;
}

// The kernel send buffer of a connection from a node listening at
// `own_host` to `address`, for the SNDBUF parameter's text `setting`: a
// number of bytes (0: the kernel's autotuning), or "auto": 65536 bytes to
// a peer on another host, autotuning to this host's. Why: a worker's pushes
// to several servers on other hosts, with autotuned buffers (megabytes
// each), let one connection run far ahead of another; a partition's round
// waits for its slowest pusher and the sums come back late
// (docs/cluster-bench.md: 1.33x Gloo's ring on 1 Gbit/s links, 1.45x with
// 64 KiB). To this host (loopback, shared memory's peers) autotuning stays.
inline int send_buffer_for(const std::string& address, const std::string& own_host,
                           long long setting) {
  constexpr int kRemoteSendBuffer = 65536;
  if (setting >= 0) return static_cast<int>(setting);
  std::string host = address;
  if (host.rfind("tcp://", 0) == 0) host = host.substr(6);
  host = host.substr(0, host.rfind(':'));
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  bool local = own_host.empty() || host == own_host || host == "localhost" || host == "::1" ||
               host.rfind("127.", 0) == 0;
  return local ? 0 : kRemoteSendBuffer;
}

// The SNDBUF parameter of both TCP vans, declared once.
inline constexpr Param kSndBuf{
    "SNDBUF", "auto",
    "kernel send buffer of a connection to a peer, in bytes: auto = 65536 to peers on other "
    "hosts and the kernel's autotuning to this host's; 0 = autotuning always"};

// The SNDBUF parameter as send_buffer_for() takes it: -1 for "auto".
inline long long send_buffer_setting(const Host& host, const Param& param) {
  if (param.text(host) == "auto") return -1;
  long long bytes = param.integer(host);
  if (bytes > (1ll << 30))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                std::string("plugin parameter ") + param.info.name + " is too large");
  return bytes;
}

}  // namespace caravan::plugin::tcp

#endif  // CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H
