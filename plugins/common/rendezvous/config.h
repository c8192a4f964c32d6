// The rendezvous protocol's settings, its counters and its log sink, shared
// by every part of it.
#ifndef CARAVAN_RENDEZVOUS_CONFIG_H
#define CARAVAN_RENDEZVOUS_CONFIG_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan::rendezvous {

struct Config {
  size_t eager_bytes = 64 * 1024;  // largest frame, header included
  size_t max_registered_bytes = size_t{512} << 20;
  size_t rx_depth = 64;                 // receive buffers kept posted
  size_t read_chunk = size_t{8} << 20;  // largest single remote read
  bool rma = true;                      // false: large messages go as chunks
  bool zero_copy = false;               // true: register callers' memory instead of staging it
  int orphan_grace_ms = 1000;
  // Receive buffers lent to senders (the remote-buffer cache); 0: none,
  // every large message is read after a request to send. Needs rma.
  size_t cache_bytes = 0;
};

// How large messages went, over the protocol's life.
struct Counts {
  size_t by_request = 0;  // requests to send (remote reads)
  size_t by_write = 0;    // written into a lent buffer
  size_t lent = 0;        // buffers this side lent to senders
  size_t lent_bytes = 0;  // their bytes, now
};

// The CACHE_BYTES plugin parameter checked: 0 to a quarter of the limit.
size_t cache_bytes_param(int64_t value, size_t max_registered_bytes);
// Counts as the finalize log line gives them.
std::string describe(const Counts& c);

using LogFn = std::function<void(caravan_log_level, const std::string&)>;

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_CONFIG_H
