// Starts the processes of one job and supervises them until all are gone.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace caravan::launch {

struct ChildSpec {
  std::string name;               // "scheduler", "server 0", "worker 1"
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  std::vector<std::string> env;   // the child's whole environment, "KEY=VALUE"
  // When set: the child's stdin is a pipe that gets these bytes and then
  // stays open until the child exits (a remote child started over ssh
  // reads its secrets there, and its end closing means "stop").
  std::optional<std::string> stdin_data;
  // When >= 0: a listening socket the child gets as descriptor
  // kInheritedListenFd (the scheduler's, bound by the launcher). The
  // launcher closes its own copy once the child is forked.
  int listen_fd = -1;
};

// Where a child finds ChildSpec::listen_fd, as with systemd's sockets.
constexpr int kInheritedListenFd = 3;

struct JobOutcome {
  int exit_code = 0;   // 0, 1 on a failed child or timeout, 128+N on signal N
  std::string reason;  // why it failed; empty on success
};

// Runs every child in its own process group, copies their output to stdout
// line by line behind "[name] ", and stops them all once one fails, the
// timeout passes (0 = never) or the launcher gets SIGINT/SIGTERM/SIGHUP.
JobOutcome RunJob(const std::vector<ChildSpec>& children, double timeout_seconds);

}  // namespace caravan::launch
