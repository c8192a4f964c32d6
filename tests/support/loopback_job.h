// A job of real processes on loopback for tests that attack it: the
// scheduler, one server whose van listens on a port known in advance, and
// sum_check_worker workers started when the test says; and raw TCP
// connections to it, as a stranger would open them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {

// Seconds on a steady clock, for deadlines.
double now_s();

// A TCP connection to 127.0.0.1:port: the socket, or -1. *local is the
// connection's own end ("127.0.0.1:40312"), as the scheduler logs it.
int connect_loopback(int port, std::string* local);

struct LoopbackJobSpec {
  std::string server_bin;  // caravan-server
  std::string worker_bin;  // sum_check_worker
  int workers = 2;
  std::vector<std::string> worker_args;
  std::vector<std::pair<std::string, std::string>> env;  // for every process
};

class LoopbackJob {
 public:
  // Starts the scheduler and the server (PS_VERBOSE=1, so their start-up
  // can be waited for).
  explicit LoopbackJob(LoopbackJobSpec spec);
  // Worker `rank` (DMLC_WORKER_ID).
  void start_worker(int rank);
  // Every process, scheduler first, then the server, then the workers.
  std::vector<RunningProcess*> all() const;

  const int port;      // the scheduler's
  const int van_port;  // the server's
  std::unique_ptr<RunningProcess> scheduler, server;
  std::vector<std::unique_ptr<RunningProcess>> workers;

 private:
  ProcessSpec spec(const std::string& role, const std::string& bin) const;
  LoopbackJobSpec spec_;
};

}  // namespace caravan::test
