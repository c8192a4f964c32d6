// Which share of the job's bytes each server holds. Even by default; with
// BYTEPS_ENABLE_MIXED_MODE, servers on worker hosts (colocated) and servers
// on hosts of their own (dedicated) take the shares that load every
// host's link equally (server_shares.cc derives them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace caravan {

struct ServerShares {
  std::vector<double> shares;  // by server rank, summing to 1; empty: even
  std::string summary;         // for the log: who takes what, and why
};

// `colocated`: by server rank, whether a worker runs on the server's host.
// `worker_hosts`: how many hosts run workers.
ServerShares mixed_mode_shares(const std::vector<bool>& colocated, size_t worker_hosts);

// The fraction of the bytes dedicated servers should hold, n worker hosts
// (each with servers of its own) beside k dedicated server hosts.
double dedicated_fraction(size_t n, size_t k);

}  // namespace caravan
