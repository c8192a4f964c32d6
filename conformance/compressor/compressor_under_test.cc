#include "compressor_under_test.h"

#include <gtest/gtest.h>

#include <cmath>

#include "conformance/host/plugin_file.h"

namespace caravan::conformance {

CompressorFile open_compressor(const std::string& path) {
  CompressorFile f;
  f.path = path;
  PluginFile file;
  f.error = open_plugin_file(path, static_cast<caravan_plugin_kind>(CARAVAN_PLUGIN_KIND_COMPRESSOR),
                             CARAVAN_COMPRESSOR_ABI_MAJOR_V1, &file);
  if (!f.error.empty()) return f;
  f.entry = file.entry;
  f.descriptor = file.descriptor;
  f.ops = static_cast<const caravan_compressor_ops_v1*>(file.ops);
  return f;
}

namespace {

std::vector<caravan_compressor_param_v1> c_params(const Params& params) {
  std::vector<caravan_compressor_param_v1> out;
  for (const auto& [key, value] : params) out.push_back({key.c_str(), value.c_str()});
  return out;
}

}  // namespace

Compressor::Compressor(const std::string& path, const Params& params, caravan_dtype dtype,
                       size_t count)
    : file_(open_compressor(path)), host_("compressor"), dtype_(dtype), count_(count) {
  if (!file_.error.empty()) {
    failure_ = path + ": " + file_.error;
    return;
  }
  caravan_status s = ops().init(host_.table(), &ctx_);
  if (s != CARAVAN_STATUS_OK) {
    ctx_ = nullptr;
    failure_ = "init returned " + std::to_string(s) + ": " + host_.error();
    return;
  }
  std::vector<caravan_compressor_param_v1> pairs = c_params(params);
  create_status_ =
      ops().create(ctx_, pairs.data(), pairs.size(), dtype, count, &state_, &max_bytes_);
  if (create_status_ != CARAVAN_STATUS_OK) {
    state_ = nullptr;
    failure_ = "create returned " + std::to_string(create_status_) + ": " + host_.error();
  }
}

Compressor::~Compressor() {
  if (state_) {
    EXPECT_EQ(ops().destroy(ctx_, state_), CARAVAN_STATUS_OK) << host_.error();
  }
  if (ctx_) {
    EXPECT_EQ(ops().finalize(ctx_), CARAVAN_STATUS_OK) << host_.error();
  }
}

Bytes Compressor::compress(const Bytes& src, uint64_t seed, int direction) {
  EXPECT_EQ(src.size(), tensor_bytes());
  Bytes out(max_bytes_);
  size_t len = 0;
  caravan_status s = ops().compress(ctx_, state_, src.data(), out.data(), &len, seed, direction);
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << host_.error();
  EXPECT_LE(len, max_bytes_);
  if (s != CARAVAN_STATUS_OK || len > max_bytes_) return {};
  out.resize(len);
  return out;
}

caravan_status Compressor::decompress(const Bytes& payload, Bytes& dst, bool accumulate,
                                      uint64_t seed, int direction) {
  EXPECT_EQ(dst.size(), tensor_bytes());
  return ops().decompress(ctx_, state_, payload.data(), payload.size(), dst.data(),
                          accumulate ? 1 : 0, seed, direction);
}

Bytes Compressor::decode(const Bytes& payload, uint64_t seed, int direction) {
  Bytes out(tensor_bytes());
  EXPECT_EQ(decompress(payload, out, false, seed, direction), CARAVAN_STATUS_OK) << host_.error();
  return out;
}

std::vector<double> to_doubles(caravan_dtype dtype, const Bytes& bytes) {
  if (dtype == CARAVAN_FLOAT32) {
    std::vector<float> v = from_bytes<float>(bytes);
    return {v.begin(), v.end()};
  }
  return from_bytes<double>(bytes);
}

Bytes from_doubles(caravan_dtype dtype, const std::vector<double>& values) {
  if (dtype == CARAVAN_FLOAT32) return to_bytes(std::vector<float>(values.begin(), values.end()));
  return to_bytes(values);
}

std::vector<double> random_values(size_t n, uint64_t seed) {
  TestRng rng(seed);
  std::vector<double> out(n);
  for (double& x : out) {
    uint64_t r = rng.next();
    if (r % 64 == 0) {
      x = (r & 64) ? -0.0 : 0.0;
      continue;
    }
    int exponent = static_cast<int>((r >> 8) % 17) - 8;
    double magnitude = std::ldexp(1.0 + rng.uniform(), exponent);
    x = (r & 128) ? -magnitude : magnitude;
  }
  return out;
}

}  // namespace caravan::conformance
