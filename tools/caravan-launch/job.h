// Starts the processes of one job and supervises them until all are gone.
#pragma once

#include <string>
#include <vector>

namespace caravan::launch {

struct ChildSpec {
  std::string name;               // "scheduler", "server 0", "worker 1"
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  std::vector<std::string> env;   // the child's whole environment, "KEY=VALUE"
};

struct JobOutcome {
  int exit_code = 0;   // 0, 1 on a failed child or timeout, 128+N on signal N
  std::string reason;  // why it failed; empty on success
};

// Runs every child in its own process group, copies their output to stdout
// line by line behind "[name] ", and stops them all once one fails, the
// timeout passes (0 = never) or the launcher gets SIGINT/SIGTERM/SIGHUP.
JobOutcome RunJob(const std::vector<ChildSpec>& children, double timeout_seconds);

}  // namespace caravan::launch
