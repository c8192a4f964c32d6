// What a summation server does with a key's pushes, fixed by the key's
// first push:
//   - sum: a round's pushes are summed into its first (a buffer of its own
//     each round, kept without copying), and every worker gets the sum;
//   - relay (a broadcast): the root's values are kept until every worker
//     has asked, then the others get them and the root an empty answer;
//     a direct relay (an all-to-all's block) waits for the root and one
//     other worker only;
//   - compressed (byteps_compressor_type): each push decompressed into the
//     round's sum, the sum compressed once for every worker;
//   - async (BYTEPS_ENABLE_ASYNC): each push added into the key's running
//     store at once, and answered with the store as it is then.
// Each goes through its key's Round (round.h); a new kind (a gather, sliced
// answers) is one more class here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/reducer/reducer.h"
#include "engine/server/answers.h"
#include "engine/server/push_pull_request.h"
#include "engine/server/round.h"

namespace caravan {

// A request queued for its key's summation thread.
struct Push {
  KVMessage request;        // vals: the values, wherever they lie
  PushPullRequest checked;  // what the receiving thread found, so no one parses it again
  uint64_t sequence = 0;
  Source source;
  int64_t arrived_us = 0;  // for the timeline, when tracing
};

class KeyKind;

struct KeyState {
  explicit KeyState(int num_workers) : round(num_workers) {}
  std::unique_ptr<KeyKind> kind;  // fixed by the first push
  bool broadcast = false;
  size_t bytes = 0;
  int dtype = -1;
  std::string compression;  // the parameters the first push gave
  // Set when workers disagree on the key: every push of it is refused from
  // then on, so no worker gets a wrong sum.
  std::string poisoned;
  Round round;
};

// What every kind uses: how to answer, how to sum.
struct KeyContext {
  Answers& answers;
  Reducer& reducer;
  std::string plugin_path;  // where compressor plugins are found
};

class KeyKind {
 public:
  virtual ~KeyKind() = default;
  // One push, checked against the key's shape (not its round); answers
  // the round's workers when it completes. Refuses what does not fit.
  virtual void push(KeyState& k, uint64_t key, Push&& p) = 0;
};

// Refuses the key from now on, and tells the workers waiting in its round.
void poison(KeyState& k, Answers& answers, const std::string& why);

std::unique_ptr<KeyKind> make_sum_kind(const KeyContext& ctx);
std::unique_ptr<KeyKind> make_relay_kind(const KeyContext& ctx);
std::unique_ptr<KeyKind> make_async_kind(const KeyContext& ctx);
// Throws std::exception when the compressor refuses the first push's
// parameters (the caller poisons the key).
std::unique_ptr<KeyKind> make_compressed_kind(const KeyContext& ctx, const Push& first);

}  // namespace caravan
