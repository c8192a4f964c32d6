#include "engine/compress/compression_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "engine/base/error.h"

namespace caravan {
namespace {

// The keys the engine reads itself; the compressor plugin reads the rest
// of the byteps_compressor_* and byteps_dithering_* family.
constexpr const char* kType = "byteps_compressor_type";
constexpr const char* kErrorFeedback = "byteps_error_feedback_type";
constexpr const char* kMomentum = "byteps_momentum_type";
constexpr const char* kMomentumMu = "byteps_momentum_mu";
constexpr const char* kSeed = "byteps_seed";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool valid_plugin_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace

std::string CompressionSpec::text() const {
  std::string t;
  for (const auto& [k, v] : params) t += k + "=" + v + "\n";
  return t;
}

CompressionSpec CompressionSpec::parse(const std::string& tensor, const TensorParamList& given) {
  auto bad = [&](const std::string& key, const std::string& value, const std::string& why) {
    throw Error(CARAVAN_ERR_INVALID_ARGUMENT,
                "tensor '" + tensor + "': " + key + "='" + value + "' " + why);
  };
  CompressionSpec s;
  for (const auto& [key, value] : given) {
    if (key.find_first_of("=\n") != std::string::npos || value.find('\n') != std::string::npos)
      bad(key, value, "holds '=' or a line break, which no parameter can");
    for (const auto& [k, v] : s.params)
      if (k == key) bad(key, value, "is given twice (also as '" + v + "')");
    if (key == kType) {
      // BytePS's names, and "none" as the explicit absence.
      if (value != "none" && !valid_plugin_name(value))
        bad(key, value,
            "is not a compressor name (onebit, topk, randomk, dithering, or a plugin's: "
            "lower-case letters, digits, '_' and '-')");
      if (value != "none") s.type = value;
    } else if (key == kErrorFeedback) {
      if (value != "vanilla" && value != "none") bad(key, value, "is not vanilla or none");
      s.error_feedback = value == "vanilla";
    } else if (key == kMomentum) {
      if (value != "nesterov" && value != "none") bad(key, value, "is not nesterov or none");
      s.momentum = value == "nesterov";
    } else if (key == kMomentumMu) {
      char* end = nullptr;
      errno = 0;
      double mu = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || errno || !(mu >= 0 && mu < 1))
        bad(key, value, "is not a number from 0 up to (not including) 1");
      s.momentum_mu = mu;
    } else if (key == kSeed) {
      char* end = nullptr;
      errno = 0;
      unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end || errno || value[0] == '-')
        bad(key, value, "is not a non-negative whole number");
      s.seed = seed;
    } else if (!starts_with(key, "byteps_compressor_") && !starts_with(key, "byteps_dithering_") &&
               starts_with(key, "byteps_")) {
      bad(key, value,
          "is not a compression parameter (byteps_compressor_*, byteps_dithering_*, " +
              std::string(kErrorFeedback) + ", " + kMomentum + ", " + kMomentumMu + ", " + kSeed +
              ")");
    }
    s.params.emplace_back(key, value);
  }
  std::sort(s.params.begin(), s.params.end());
  if (!s.compressed())
    for (const auto& [key, value] : s.params)
      if ((key == kErrorFeedback && value != "none") || (key == kMomentum && value != "none") ||
          (starts_with(key, "byteps_compressor_") && key != kType) ||
          starts_with(key, "byteps_dithering_"))
        bad(key, value,
            "is given without a compressor: set byteps_compressor_type (onebit, topk, randomk, "
            "dithering, or a plugin's name)");
  return s;
}

CompressionSpec CompressionSpec::from_text(const std::string& text) {
  TensorParamList pairs;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    size_t eq = text.find('=', at);
    if (nl == std::string::npos || eq == std::string::npos || eq > nl)
      throw std::invalid_argument("not a compression parameter list: '" + text + "'");
    pairs.emplace_back(text.substr(at, eq - at), text.substr(eq + 1, nl - eq - 1));
    at = nl + 1;
  }
  try {
    return parse("(from a worker)", pairs);
  } catch (const Error& e) {
    throw std::invalid_argument(e.what());
  }
}

uint64_t round_seed(uint64_t tensor_seed, uint64_t key, uint64_t round) {
  uint64_t z = tensor_seed ^ (key * 0x9E3779B97F4A7C15ull) ^ (round * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace caravan
