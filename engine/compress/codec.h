// Compression of one partition, as the data path uses it. A Codec is one
// state of the tensor's compressor plugin (compressor_v1.h); PushCodec
// adds the worker's momentum and error feedback around it, SumCodec the
// server's error feedback (docs/compression.md has the arithmetic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "caravan/dtype.h"
#include "engine/compress/compression_spec.h"

namespace caravan {

class CompressorPlugin;

// Loads the compressor `spec` names (once per process), so that a name
// without a plugin fails at declaration; throws CARAVAN_ERR_PLUGIN listing
// the paths tried.
void load_compressor(const CompressionSpec& spec, const std::string& plugin_path);

class Codec {
 public:
  // `what` names the partition in errors ("tensor 'w' partition 2").
  // Throws caravan::Error: PLUGIN when the compressor cannot be loaded,
  // INVALID_ARGUMENT when it refuses the tensor's parameters or dtype.
  Codec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
        const std::string& plugin_path, std::string what);
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  size_t max_bytes() const { return max_bytes_; }
  size_t count() const { return count_; }
  caravan_dtype dtype() const { return dtype_; }
  const std::string& what() const { return what_; }
  // Throws caravan::Error naming the partition.
  size_t compress(const void* src, void* dst, uint64_t seed, int direction);
  void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t seed,
                  int direction);

 private:
  std::shared_ptr<CompressorPlugin> plugin_;
  void* state_ = nullptr;
  caravan_dtype dtype_;
  size_t count_;
  size_t max_bytes_ = 0;
  std::string what_;
};

// A worker's partition: nesterov momentum (m = mu m + g; g + mu m is
// sent), then vanilla error feedback (what the last compression lost is
// added before this one, and what this one loses is kept), then the codec.
class PushCodec {
 public:
  PushCodec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
            const std::string& plugin_path, const std::string& what);
  size_t max_bytes() const { return codec_.max_bytes(); }
  // Compresses the partition's `grad` into `out` (max_bytes()); returns
  // the bytes written.
  size_t compress(const void* grad, void* out, uint64_t seed);
  // The server's answer into `dst` (the partition's elements).
  void decompress_sum(const void* payload, size_t len, void* dst, uint64_t seed);

 private:
  Codec codec_;
  bool error_feedback_, momentum_;
  double mu_;
  // deficit_: minus the error carried (codec.cc says why negated).
  std::vector<char> deficit_, velocity_, work_;
};

// A server's key: the workers' pushes decompressed into one sum, and the
// sum compressed for the pull, with error feedback when the tensor asks.
class SumCodec {
 public:
  SumCodec(const CompressionSpec& spec, caravan_dtype dtype, size_t count,
           const std::string& plugin_path, const std::string& what);
  size_t max_bytes() const { return codec_.max_bytes(); }
  // Adds a worker's push into the sum (the round's first replaces it).
  void add(const void* payload, size_t len, bool first, uint64_t seed);
  // Compresses the round's sum into `out`; returns the bytes written.
  size_t compress_sum(void* out, uint64_t seed);

 private:
  Codec codec_;
  bool error_feedback_;
  std::vector<char> sum_, deficit_;
};

}  // namespace caravan
