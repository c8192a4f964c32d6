#include "engine/server/push_pull_request.h"

#include <cstring>

#include "engine/base/dtype.h"
#include "engine/control/node_info.h"

namespace caravan {

bool worker_rank_of(int32_t sender, int num_workers, int* rank) {
  if (sender < worker_id(0) || sender > worker_id(num_workers - 1) ||
      (sender - worker_id(0)) % 2 != 0)
    return false;
  *rank = (sender - worker_id(0)) / 2;
  return true;
}

bool parse_push_pull_request(const KVMessage& req, int num_workers, PushPullRequest* out,
                             std::string* why) {
  const wire::Header& h = req.head;
  int rank = -1;
  if (!worker_rank_of(h.sender, num_workers, &rank)) {
    *why = "node " + std::to_string(h.sender) + " is not a worker of this job";
    return false;
  }
  if (!(h.flags & wire::kPush)) {
    *why = "this server only answers push_pull requests";
    return false;
  }
  // A push without kPull (a reduce-scatter's partition of another worker's
  // shard) is summed and answered without values: only as plain values.
  if (!(h.flags & wire::kPull) && (h.flags & (wire::kBroadcast | wire::kShm | wire::kCompressed))) {
    *why = "a push without pull is neither a broadcast nor compressed nor in shared memory";
    return false;
  }
  if (req.keys.len != sizeof(uint64_t)) {
    *why = "a push_pull request carries exactly one key";
    return false;
  }
  // dtype_size() is 0 for a number that is no caravan_dtype, so later casts
  // to caravan_dtype only ever see valid values.
  size_t esize = dtype_size(h.dtype);
  out->compressed = (h.flags & wire::kCompressed) != 0;
  if (out->compressed) {
    if (esize == 0) {
      *why = "dtype " + std::to_string(h.dtype) + " is no element type";
      return false;
    }
    if (h.flags & (wire::kBroadcast | wire::kShm)) {
      *why = "a compressed push goes through the van and is no broadcast";
      return false;
    }
    // "key=value\n"... then "count=<elements>\n", NUL-padded.
    std::string text(static_cast<const char*>(req.lens.data), req.lens.len);
    while (!text.empty() && text.back() == '\0') text.pop_back();
    size_t last = text.size() >= 2 ? text.rfind('\n', text.size() - 2) : std::string::npos;
    size_t from = last == std::string::npos ? 0 : last + 1;
    const std::string tag = "count=";
    unsigned long long count = 0;
    bool ok = !text.empty() && text.back() == '\n' && text.compare(from, tag.size(), tag) == 0 &&
              text.size() - from - tag.size() - 1 <= 19;
    for (size_t i = from + tag.size(); ok && i + 1 < text.size(); ++i) {
      ok = text[i] >= '0' && text[i] <= '9';
      count = count * 10 + static_cast<unsigned>(text[i] - '0');
    }
    // A partition larger than 2^40 bytes is no partition of this engine's.
    if (!ok || count == 0 || count > (uint64_t{1} << 40) / esize) {
      *why = "a compressed push without a valid 'count=' line in its parameters";
      return false;
    }
    out->compression = text.substr(0, from);
    out->count = count;
  } else if (esize == 0 || req.vals.len % esize != 0) {
    *why = "dtype " + std::to_string(h.dtype) + " with " + std::to_string(req.vals.len) +
           " value bytes is not a whole number of elements";
    return false;
  }
  if ((h.flags & wire::kDirect) && !(h.flags & wire::kBroadcast)) {
    *why = "a relay to one worker (an all-to-all's block) without the broadcast flag";
    return false;
  }
  if (h.flags & wire::kBroadcast) {
    if (h.cmd < 0 || h.cmd >= num_workers) {
      *why = "broadcast from rank " + std::to_string(h.cmd) + " in a job of " +
             std::to_string(num_workers) + " workers";
      return false;
    }
    if (h.flags & wire::kShm) {
      *why = "a broadcast goes through the van, not shared memory";
      return false;
    }
    if ((h.cmd == rank) != (req.vals.len > 0)) {
      *why = h.cmd == rank ? "the root of a broadcast sent no values"
                           : "worker " + std::to_string(rank) +
                                 " sent values in a broadcast from worker " + std::to_string(h.cmd);
      return false;
    }
    out->root = h.cmd;
    out->direct = (h.flags & wire::kDirect) != 0;
  }
  out->rank = rank;
  // The van ABI promises no alignment: a van may hand over segments packed
  // at any offset.
  std::memcpy(&out->key, req.keys.data, sizeof out->key);
  out->element_bytes = esize;
  if (!out->compressed) out->count = req.vals.len / esize;
  return true;
}

}  // namespace caravan
