// Splits a child's byte stream into lines and tags each with its role.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace caravan::launch {

class LinePrefixer {
 public:
  explicit LinePrefixer(std::string prefix) : prefix_(std::move(prefix)) {}

  // Appends every complete line in data, prefixed, to out; keeps the rest.
  void Feed(const char* data, size_t len, std::string* out);
  // Emits a held partial line (with a newline added), if any.
  void Flush(std::string* out);

 private:
  // A child that never prints a newline must not grow memory without bound.
  static constexpr size_t kMaxPending = 64 * 1024;

  std::string prefix_;
  std::string pending_;
};

}  // namespace caravan::launch
