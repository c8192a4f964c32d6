// BytePS-style summation, one request handler on top of the KV layer: every
// worker pushes a key once per round; when all pushes of the round are in,
// each worker gets the sum back as the answer to its own request.
//
// Each round sums into a buffer of its own (the round's first push, kept
// without copying), released only when the van has sent the last answer
// from it: a fast worker's next round can never overwrite a sum a slow
// worker has not received.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/kv/kv_endpoint.h"
#include "engine/reducer/reducer.h"

namespace caravan {

class SumServer {
 public:
  SumServer(KVEndpoint& kv, Reducer& reducer, int num_workers);
  // Handles one request; runs on the KV receive thread.
  void handle(KVMessage&& request);
  // Drops rounds in progress (shutdown or job failure).
  void clear();

 private:
  struct Round {
    Blob sum;  // the accumulator, alive until every answer was sent
    std::vector<wire::Header> waiting;
    std::vector<bool> pushed;  // by worker rank
  };
  struct KeyState {
    size_t bytes = 0;
    int dtype = -1;
    Round round;
    // Set when workers disagree on the key's size or dtype: every push of
    // it is refused from then on, so no worker gets a wrong sum.
    std::string poisoned;
  };
  void refuse(const KVMessage& request, int code, const std::string& why);
  void answer_error(const wire::Header& request, int code, const std::string& why);

  KVEndpoint& kv_;
  Reducer& reducer_;
  int num_workers_;
  std::unordered_map<uint64_t, KeyState> keys_;
};

}  // namespace caravan
