#include "engine/base/env.h"

#include <cerrno>
#include <cstdlib>

#include "engine/base/error.h"

namespace caravan::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int64_t parse_integer(const char* name, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  bool ok = !text.empty() && end && *end == '\0' && errno == 0;
  if (!ok)
    throw config_error(std::string(name) + "='" + text + "' is not an integer (expected " +
                       std::to_string(lo) + ".." + std::to_string(hi) + ")");
  if (v < lo || v > hi)
    throw config_error(std::string(name) + "='" + text + "' is out of range (expected " +
                       std::to_string(lo) + ".." + std::to_string(hi) + ")");
  return v;
}

int64_t integer(const char* name, int64_t lo, int64_t hi, std::optional<int64_t> fallback) {
  auto v = get(name);
  if (!v) {
    if (!fallback) throw config_error(std::string(name) + " is not set");
    return *fallback;
  }
  return parse_integer(name, *v, lo, hi);
}

int64_t required_integer(const char* name, int64_t lo, int64_t hi) {
  return integer(name, lo, hi, std::nullopt);
}

std::string required(const char* name, const char* meaning) {
  auto v = get(name);
  if (!v) throw config_error(std::string(name) + " is not set (" + meaning + ")");
  return *v;
}

bool boolean(const char* name, bool fallback) {
  auto v = get(name);
  if (!v) return fallback;
  if (*v == "1" || *v == "true") return true;
  if (*v == "0" || *v == "false") return false;
  throw config_error(std::string(name) + "='" + *v + "' is not 0 or 1");
}

}  // namespace caravan::env
