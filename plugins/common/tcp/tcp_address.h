// What the TCP vans (van-zmq, van-tcp) share about their addresses:
// "tcp://HOST:PORT" text, an IPv6 host in brackets, and the checks of
// listen()'s arguments that van_v2.h asks of every van.
#ifndef CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H
#define CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H

#include <string>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin::tcp {

inline std::string endpoint(const std::string& host, const std::string& port) {
  bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + port;
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
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "cannot listen on " + r.where + ": port out of range");
  return r;
}

}  // namespace caravan::plugin::tcp

#endif  // CARAVAN_PLUGINS_COMMON_TCP_TCP_ADDRESS_H
