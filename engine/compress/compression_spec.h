// A tensor's compression as its byteps_* parameters declare it (BytePS's
// key/value pairs, docs/compression.md): which compressor plugin, error
// feedback, momentum and the seed, and the pairs as given for the plugin.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace caravan {

using TensorParamList = std::vector<std::pair<std::string, std::string>>;

struct CompressionSpec {
  std::string type;             // byteps_compressor_type: the plugin's name; empty: none
  bool error_feedback = false;  // byteps_error_feedback_type=vanilla
  bool momentum = false;        // byteps_momentum_type=nesterov
  double momentum_mu = 0.9;     // byteps_momentum_mu
  uint64_t seed = 0;            // byteps_seed
  TensorParamList params;       // every pair, sorted by key: what the plugin reads

  bool compressed() const { return !type.empty(); }
  // "key=value\n" per pair, sorted: the same on every worker that declared
  // the same parameters, so the server can check they agree.
  std::string text() const;

  // Reads `params` for tensor `tensor`; throws CARAVAN_ERR_INVALID_ARGUMENT
  // naming the tensor, the key and the value for a value it cannot use, a
  // byteps_ key it does not know, or a setting without a compressor.
  static CompressionSpec parse(const std::string& tensor, const TensorParamList& params);
  // text() back; throws std::invalid_argument when it is not such a text.
  static CompressionSpec from_text(const std::string& text);
};

// The seed of one partition's round: the tensor's seed, the partition's
// key and the round, mixed so that neighbouring rounds and keys draw
// unrelated numbers. Workers and the server compute the same.
uint64_t round_seed(uint64_t tensor_seed, uint64_t key, uint64_t round);

}  // namespace caravan
