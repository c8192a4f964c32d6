#include "engine/worker/server_shares.h"

#include <algorithm>
#include <cstdio>

namespace caravan {

// Per step each of n workers pushes M bytes and pulls M back. Dedicated
// servers (k hosts) hold a fraction x of them, the colocated ones (one set
// per worker host) 1 - x. Bytes each way through a link:
//   worker host:    x M (to and from the dedicated servers)
//                 + 2 (1 - x) M (n - 1) / n (its own pushes to the other
//                   hosts' servers, and its servers' answers to the other
//                   workers; the share that stays on the host is free)
//   dedicated host: n x M / k
// The step is as slow as the busiest link; the first falls and the second
// grows with x, so they meet at the best x:
//   x + a (1 - x) = n x / k,  a = 2 (n - 1) / n   =>   x = a / (n / k + a - 1)
// At or past k = n the dedicated servers take everything (x = 1), and a
// job on one host keeps every byte at home (x = 0). 4 worker hosts and 2
// server hosts give x = 0.6: 1.2 M a link against colocated's 1.5 M and
// dedicated's 2 M, the bound the cluster benchmark's mixed mode checks.
double dedicated_fraction(size_t n, size_t k) {
  if (n <= 1 || k == 0) return 0;
  double a = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n);
  double x = a / (static_cast<double>(n) / static_cast<double>(k) + a - 1);
  return std::clamp(x, 0.0, 1.0);
}

ServerShares mixed_mode_shares(const std::vector<bool>& colocated, size_t worker_hosts) {
  size_t c = static_cast<size_t>(std::count(colocated.begin(), colocated.end(), true));
  size_t k = colocated.size() - c;
  ServerShares out;
  if (c == 0 || k == 0) {
    out.summary = "BYTEPS_ENABLE_MIXED_MODE=1, but " +
                  std::string(c == 0 ? "no server runs on a worker host"
                                     : "every server runs on a worker host") +
                  ": the servers hold even shares";
    return out;
  }
  double x = dedicated_fraction(worker_hosts, k);
  for (bool here : colocated)
    out.shares.push_back(here ? (1 - x) / static_cast<double>(c) : x / static_cast<double>(k));
  char text[200];
  std::snprintf(text, sizeof text,
                "mixed mode: dedicated servers (%zu) hold %.0f%% of the bytes, servers on the %zu "
                "worker hosts (%zu) %.0f%%",
                k, 100 * x, worker_hosts, c, 100 * (1 - x));
  out.summary = text;
  return out;
}

}  // namespace caravan
