// Starts the processes of one job and supervises them until all are gone.
#pragma once

#include <functional>
#include <memory>
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
  // --elastic: the process started in this one's place after it fails: a
  // worker or server new to the job (without DMLC_WORKER_ID or
  // CARAVAN_SERVER_ID: it joins at a regroup), or a scheduler that takes
  // the running job over from its nodes (given the same listen_fd, which
  // the launcher then keeps open).
  std::shared_ptr<const ChildSpec> replacement;
  // The job cannot go on without it (the scheduler): once it is not
  // started again, its failure ends the job.
  bool vital = false;
  // A worker (--elastic): once none is left running or to be started
  // again, the job cannot go on, and the launcher ends it.
  bool worker = false;
  // Failures of the children of one domain count together against
  // Elasticity::max_restarts: their host (--hostfile), else the child.
  std::string failure_domain;
};

// --elastic (CARAVAN_ELASTIC=1): a worker or server that fails is started
// again while the job runs, up to max_restarts times a failure domain; and
// `added`, when set, is asked about once a second for new children to
// start (the hosts a host file adds).
struct Elasticity {
  bool enabled = false;
  int max_restarts = 3;
  std::function<std::vector<ChildSpec>()> added;
};

// Where a child finds ChildSpec::listen_fd, as with systemd's sockets.
constexpr int kInheritedListenFd = 3;

struct JobOutcome {
  int exit_code = 0;   // 0, 1 on a failed child or timeout, 128+N on signal N
  std::string reason;  // why it failed; empty on success
  int restarts = 0;    // processes started again (Elasticity)
  int added = 0;       // processes started for Elasticity::added
};

// Runs every child in its own process group, copies their output to stdout
// line by line behind "[name] ", and stops them all once one fails, the
// timeout passes (0 = never) or the launcher gets SIGINT/SIGTERM/SIGHUP;
// with `elastic` enabled, a failed child that has a replacement is started
// again instead, unless the job is ending.
JobOutcome RunJob(const std::vector<ChildSpec>& children, double timeout_seconds,
                  const Elasticity& elastic = {});

}  // namespace caravan::launch
