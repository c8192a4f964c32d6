// --compress for the benchmarks that replay gradients (caravan-replay-bench,
// the emulated cluster's worker): the byteps_* parameters every tensor is
// declared with (docs/compression.md), gradient-like values to compress
// (a compressor's cost depends on them: top-k of equal values is no
// selection), and the bytes this host's interfaces sent, for the wire
// bytes per step.
#pragma once

#include <caravan/caravan.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace caravan_bench {

struct Compression {
  std::vector<std::pair<std::string, std::string>> params;
  bool on() const { return !params.empty(); }
  // "onebit" (the compressor's name), or "none".
  std::string label() const {
    for (const auto& [k, v] : params)
      if (k == "byteps_compressor_type") return v;
    return "none";
  }
};

// "key=value[,key=value...]"; exits 2 naming the malformed part.
inline Compression parse_compress(const char* prog, const std::string& spec) {
  Compression c;
  std::stringstream ss(spec);
  std::string pair;
  while (std::getline(ss, pair, ',')) {
    size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "%s: --compress: '%s' is not key=value\n", prog, pair.c_str());
      std::exit(2);
    }
    c.params.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
  }
  return c;
}

// Declares tensor `name` with the parameters; 0 or the C API's error.
inline int declare(const Compression& c, const std::string& name) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : c.params) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  return caravan_declare_tensor(name.c_str(), keys.data(), values.data(), keys.size());
}

// Values spread like a gradient's (roughly normal, scale 1e-3), different
// per rank, element and iteration.
inline void fill_gradient(float* v, size_t n, int rank, int iter) {
  uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank * 1000003 + iter + 1);
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    // Sum of four uniforms: near-normal, cheap.
    double u = static_cast<double>((s & 0xFFFF) + ((s >> 16) & 0xFFFF) + ((s >> 32) & 0xFFFF) +
                                   (s >> 48)) /
                   65536.0 -
               2.0;
    v[i] = static_cast<float>(u * 1e-3);
  }
}

// Gradient-like values for each of a set of tensors, made once (the
// values are the same every step: making them costs more than a
// compressor, and on an emulated cluster it would take CPU from the
// other hosts' timed steps).
class GradientSource {
 public:
  GradientSource(const std::vector<size_t>& sizes, int rank) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      values_.emplace_back(sizes[i]);
      fill_gradient(values_.back().data(), sizes[i], rank, static_cast<int>(i));
    }
  }
  void fill(size_t tensor, float* dst) const {
    std::copy(values_[tensor].begin(), values_[tensor].end(), dst);
  }

 private:
  std::vector<std::vector<float>> values_;
};

// The bytes every interface of this host (network namespace) has sent.
inline uint64_t host_sent_bytes() {
  std::ifstream in("/proc/net/dev");
  std::string line;
  uint64_t total = 0;
  for (int i = 0; std::getline(in, line); ++i) {
    if (i < 2) continue;  // the two header lines
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream fields(line.substr(colon + 1));
    uint64_t f[9] = {};
    for (uint64_t& x : f) fields >> x;  // 8 receive counters, then the bytes sent
    total += f[8];
  }
  return total;
}

}  // namespace caravan_bench
