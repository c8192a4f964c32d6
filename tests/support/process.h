// Runs a real program for a test: captured output, extra environment, and
// a hard deadline after which the whole process group is killed.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace caravan::test {

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string output;   // stdout and stderr interleaved
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  double timeout_s = 60;
};

ProcessResult run_process(const ProcessSpec& spec);

// The environment a local job needs for one node, without any launcher.
std::vector<std::pair<std::string, std::string>> node_env(const std::string& role, int port,
                                                          int workers, int servers);
// A TCP port that was free a moment ago on 127.0.0.1.
int free_port();

}  // namespace caravan::test
