// Which address this node advertises, and small TCP socket helpers for the
// control channel.
#pragma once

#include <string>
#include <vector>

namespace caravan::net {

// DMLC_NODE_HOST wins; then the IPv4 address of the interface named exactly
// `interface` (an error lists the interfaces that exist); then the first
// non-loopback IPv4 interface that is up; then 127.0.0.1.
std::string advertised_host(const std::string& node_host, const std::string& interface);

// Interface names with their IPv4 addresses, "eth0=10.0.0.5".
std::vector<std::string> list_interfaces();

// A listening TCP socket on host:port (port 0 = any); throws naming both.
int listen_tcp(const std::string& host, int port, int* bound_port);

// `fd`, named by the variable `var`, as this process's listening TCP socket
// on `port`: sets close-on-exec and returns it. Throws a CARAVAN_ERR_CONFIG
// error naming the variable when it is no open socket, not listening, or
// bound to another port.
int adopt_listener(const char* var, int fd, int port);

// Connects to host:port, retrying refused connections until `deadline_ms`
// (CLOCK_MONOTONIC milliseconds). Returns the fd, or -1 when the deadline
// passed; *last_error says why the last attempt failed.
int connect_tcp(const std::string& host, int port, long long deadline_ms, std::string* last_error);

// "ip:port" of the socket's peer.
std::string peer_name(int fd);

long long now_ms();

}  // namespace caravan::net
