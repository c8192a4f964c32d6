// How a summation server answers workers: with values (kept alive, not
// copied, until the van has sent the last answer from them), with the
// place of the sum in the worker's own shared-memory slot, or with an
// error; and the timeline's events of its keys (BYTEPS_TRACE_ON).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/base/timeline.h"
#include "engine/ipc/messages.h"
#include "engine/kv/kv_endpoint.h"

namespace caravan {

// A round the timeline keeps (`round` >= 0, its sum complete at
// `complete_us`): the answer's time on the wire becomes an event.
struct TracedRound {
  int64_t round = -1;  // -1: not traced
  int64_t complete_us = 0;
};

class Answers {
 public:
  using Traced = TracedRound;

  Answers(KVEndpoint& kv, int num_workers, std::shared_ptr<Timeline> timeline)
      : kv_(kv), num_workers_(num_workers), timeline_(std::move(timeline)) {}

  void values(const wire::Header& request, uint64_t key, const Blob& vals, Traced traced = {},
              uint32_t flags = 0);
  // The sum is in the request's slot already: tells the worker where.
  void in_place(const wire::Header& request, uint64_t key, const ipc::SlotDescriptor& at,
                Traced traced = {});
  void error(const wire::Header& request, int code, const std::string& why);
  // An error, logged with who sent the request.
  void refuse(const KVMessage& request, int code, const std::string& why);

  // Null unless BYTEPS_TRACE_ON=1.
  Timeline* timeline() const { return timeline_.get(); }
  // A timeline event of key `key` (round `round`) with worker `sender`.
  void trace(const char* stage, uint64_t key, uint64_t round, const wire::Header& sender,
             size_t bytes, int64_t from_us, int64_t to_us);

 private:
  static std::string trace_row(uint64_t key);
  std::string trace_args(uint64_t key, uint64_t round, const wire::Header& sender,
                         size_t bytes) const;

  KVEndpoint& kv_;
  const int num_workers_;
  // Shared with the answers' send handlers: the van keeps each until the
  // node's receiving thread polls its SENT event, or until the van closes,
  // which is after the server is gone, so a handler may outlive the server.
  std::shared_ptr<Timeline> timeline_;
};

}  // namespace caravan
