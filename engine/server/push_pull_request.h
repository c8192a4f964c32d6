// The checks a summation server makes on a push_pull request before it
// touches any state: who sent it, what it asks, and whether its key and
// values have the shape the flags and dtype claim. Pure, so a fuzzer can
// reach it without a van.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/kv/kv_message.h"

namespace caravan {

struct PushPullRequest {
  int rank = -1;  // the worker's rank
  uint64_t key = 0;
  size_t element_bytes = 0;
  size_t count = 0;     // elements
  int root = -1;        // a broadcast's root rank; -1 for a push_pull
  bool direct = false;  // a broadcast relayed to one worker only (wire::kDirect)
  // A compressed push (wire::kCompressed): the compression parameters as
  // the worker sent them (CompressionSpec::text()); count is the
  // partition's elements, from the same text.
  bool compressed = false;
  std::string compression;
};

// The rank of worker node `sender` in a job of `num_workers` workers;
// false for any other node id (checked before any arithmetic on it: a
// stranger's INT_MIN would overflow the rank computation).
bool worker_rank_of(int32_t sender, int num_workers, int* rank);

// False (with *why, to send back to the worker and to log) when `request`
// is no push_pull or broadcast of one key by a worker of a job of
// `num_workers` workers.
bool parse_push_pull_request(const KVMessage& request, int num_workers, PushPullRequest* out,
                             std::string* why);

}  // namespace caravan
