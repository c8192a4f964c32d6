// Builds a compressor ABI v1 operations table from a C++ class (header-only,
// part of the SDK), so the C boundary is written once for every compressor:
// argument checks, a state per create(), and exceptions turned into status
// codes and set_error text.
//
// The class C is one state (one partition of a tensor) and provides:
//   C(const caravan::plugin::TensorParams& params, caravan_dtype dtype, size_t count);
//       // throws plugin::Error: INVALID_ARGUMENT for a parameter
//       // (TensorParams' readers name it), UNSUPPORTED for the dtype
//   size_t max_bytes() const;
//   size_t compress(const void* src, void* dst, uint64_t seed, bool pull);  // bytes written
//   void decompress(const void* src, size_t len, void* dst, bool accumulate, uint64_t seed,
//                   bool pull);
//       // throws plugin::Error(INVALID_ARGUMENT) before writing dst when the
//       // bytes cannot be compress()'s output
// and the plugin exports its descriptor with
//   CARAVAN_PLUGIN_ENTRY(caravan::plugin::compressor_descriptor<C>("name", "1.0", "one line"))
#ifndef CARAVAN_PLUGIN_COMPRESSOR_CXX_HPP
#define CARAVAN_PLUGIN_COMPRESSOR_CXX_HPP

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "caravan/plugin/compressor_v1.h"
#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin {

// A tensor's parameters (compressor_v1.h's create), with readers whose
// errors name the key and the value.
class TensorParams {
 public:
  TensorParams(const caravan_compressor_param_v1* params, size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (params[i].key && params[i].value) pairs_.emplace_back(params[i].key, params[i].value);
  }
  std::optional<std::string> text(const std::string& key) const {
    for (const auto& [k, v] : pairs_)
      if (k == key) return v;
    return std::nullopt;
  }
  // A finite number; `fallback` when the key is absent.
  double number(const std::string& key, double fallback) const {
    auto t = text(key);
    if (!t) return fallback;
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(t->c_str(), &end);
    if (t->empty() || *end != '\0' || errno != 0 || !std::isfinite(v)) bad(key, *t, "a number");
    return v;
  }
  // A number the key must have.
  double required_number(const std::string& key, const std::string& why) const {
    if (!text(key))
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "parameter " + key + " is missing: " + why);
    return number(key, 0);
  }
  // "1", "true", "yes", "on" and "0", "false", "no", "off" (any case).
  bool flag(const std::string& key, bool fallback) const {
    auto t = text(key);
    if (!t) return fallback;
    std::string s;
    for (char c : *t) s += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
    if (s == "0" || s == "false" || s == "no" || s == "off") return false;
    bad(key, *t, "true or false");
  }
  [[noreturn]] static void bad(const std::string& key, const std::string& value,
                               const std::string& expected) {
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "parameter " + key + "='" + value + "' is not " + expected);
  }

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

template <class C>
struct CompressorTable {
  // The plugin instance holds nothing but its host: all state is per
  // partition.
  struct Plugin {
    explicit Plugin(const caravan_host_v1* host) : host_(host) {}
    const Host& host() const { return host_; }
    Host host_;
  };
  using Entry = Instance<Plugin>;

  static bool pull(int direction) {
    if (direction != CARAVAN_COMPRESSOR_PUSH && direction != CARAVAN_COMPRESSOR_PULL)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  "direction " + std::to_string(direction) + " is neither PUSH (0) nor PULL (1)");
    return direction == CARAVAN_COMPRESSOR_PULL;
  }
  static caravan_status create(void* ctx, const caravan_compressor_param_v1* params,
                               size_t num_params, caravan_dtype dtype, size_t count,
                               void** state_out, size_t* max_bytes_out) noexcept {
    return Entry::with(ctx, [&](Plugin&) {
      if (!state_out || !max_bytes_out || (num_params > 0 && !params) || count == 0)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                    "create: NULL state_out, max_bytes_out or params, or count 0");
      auto state = std::make_unique<C>(TensorParams(params, num_params), dtype, count);
      *max_bytes_out = state->max_bytes();
      *state_out = state.release();
      return CARAVAN_STATUS_OK;
    });
  }
  static caravan_status destroy(void* ctx, void* state) noexcept {
    return Entry::with(ctx, [&](Plugin&) {
      delete static_cast<C*>(state);
      return CARAVAN_STATUS_OK;
    });
  }
  static caravan_status compress(void* ctx, void* state, const void* src, void* dst,
                                 size_t* len_out, uint64_t seed, int direction) noexcept {
    return Entry::with(ctx, [&](Plugin&) {
      if (!state || !src || !dst || !len_out)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "compress: NULL state, src, dst or len_out");
      *len_out = static_cast<C*>(state)->compress(src, dst, seed, pull(direction));
      return CARAVAN_STATUS_OK;
    });
  }
  static caravan_status decompress(void* ctx, void* state, const void* src, size_t len, void* dst,
                                   int accumulate, uint64_t seed, int direction) noexcept {
    return Entry::with(ctx, [&](Plugin&) {
      if (!state || (!src && len > 0) || !dst)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "decompress: NULL state, src or dst");
      static_cast<C*>(state)->decompress(src, len, dst, accumulate != 0, seed, pull(direction));
      return CARAVAN_STATUS_OK;
    });
  }
};

template <class C>
const caravan_plugin_descriptor* compressor_descriptor(const char* name, const char* version,
                                                       const char* description) {
  using T = CompressorTable<C>;
  static const caravan_compressor_ops_v1 ops = {
      sizeof(caravan_compressor_ops_v1), T::Entry::create, T::Entry::destroy, T::create,
      T::destroy, T::compress, T::decompress};
  static const caravan_plugin_descriptor descriptor =
      plugin_descriptor(CARAVAN_PLUGIN_KIND_COMPRESSOR, CARAVAN_COMPRESSOR_ABI_MAJOR_V1,
                        CARAVAN_COMPRESSOR_ABI_MINOR_V1, name, version, description, nullptr, 0,
                        &ops);
  return &descriptor;
}

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGIN_COMPRESSOR_CXX_HPP
