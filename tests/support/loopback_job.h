// A job of real processes on loopback for tests that attack it: the
// scheduler, one server whose van listens on a port known in advance, and
// sum_check_worker workers started when the test says; and raw TCP
// connections to it, as a stranger would open them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {

// Seconds on a steady clock, for deadlines.
double now_s();

// A raw TCP connection to 127.0.0.1:port from a process that is no node
// of the job.
class Stranger {
 public:
  explicit Stranger(int port);
  ~Stranger();  // hangs up
  Stranger(const Stranger&) = delete;
  Stranger& operator=(const Stranger&) = delete;

  bool connected() const { return fd_ >= 0; }
  // The connection's own end ("127.0.0.1:40312"), as the scheduler logs it.
  const std::string& address() const { return address_; }

  // The peer may already have dropped us: a failed write is no error here.
  void send(const std::vector<uint8_t>& bytes);
  // Waits up to timeout_s for bytes from the peer: how many were read into
  // `buf` (> 0); 0 when the peer closed the connection (EOF or reset); -1
  // at the deadline, or when not connected.
  long receive(void* buf, size_t size, double timeout_s);
  // Reads (and discards) until the peer closes the connection: true;
  // false at the deadline.
  bool dropped_within(double timeout_s);

 private:
  int fd_ = -1;
  std::string address_;
};

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
