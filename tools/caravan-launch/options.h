// caravan-launch's command line: the options and their checks.
#pragma once

#include <string>
#include <vector>

#include "job.h"

namespace caravan::launch {

constexpr int kMaxProcesses = 4096;  // a typo like --workers 100000 must not fork-bomb

struct Options {
  int workers = 1;
  int servers = 1;
  bool spmd = false;
  std::string server_bin;
  std::string host = "127.0.0.1";
  double timeout = 0;
  std::string from_env;   // --from-env: mpi, slurm, k8s, auto
  std::string hostfile;   // --hostfile
  std::string discovery;  // --host-discovery-script
  std::string ssh = "ssh";
  bool elastic = false;
  int min_workers = 0, max_workers = 0;  // 0: not given
  int max_restarts = Elasticity{}.max_restarts;
  std::vector<std::string> given;  // the valued options given, for conflicts
  std::vector<std::string> command;
};

// Prints "caravan-launch: MSG" and how to get help, and exits 2.
[[noreturn]] void UsageError(const std::string& msg);

// The options of argv; --help prints the usage and exits 0, and a bad
// option is a UsageError.
Options ParseArgs(int argc, char** argv);

}  // namespace caravan::launch
