// The host table a plugin under test is handed: parameters from a map, the
// environment real or made up, and every log line and error kept so tests
// can check what the plugin said. One per plugin instance, as in the engine.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "caravan/plugin/plugin.h"

namespace caravan::conformance {

using Params = std::map<std::string, std::string>;

// Adds a check program's `--param NAME=VALUE` to `params`; false when the
// text is not NAME=VALUE.
bool add_param(const std::string& name_value, Params* params);

class FakeHost {
 public:
  // `name` prefixes the lines echoed to stderr. `env`, when given, is all
  // the plugin sees of the environment (a test that must not depend on the
  // machine's); without it the plugin reads the real one (FI_PROVIDER or
  // DMLC_INTERFACE set by CTest or the user).
  explicit FakeHost(std::string name, Params params = {}, std::optional<Params> env = std::nullopt);
  FakeHost(const FakeHost&) = delete;  // the table points at this object
  FakeHost& operator=(const FakeHost&) = delete;

  const caravan_host_v1* table() const { return &table_; }

  // The last set_error text; "" when none came since construction or clear_error().
  std::string error() const;
  void clear_error();

  // Every log line at `at_least` or above, in the order they came.
  std::vector<std::string> lines(caravan_log_level at_least = CARAVAN_LOG_TRACE) const;
  // The first log line that starts with `start`; "" when none does.
  std::string find_line(const std::string& start) const;

 private:
  struct Line {
    caravan_log_level level;
    std::string text;
  };

  std::string name_;
  Params params_;
  std::optional<Params> env_;
  mutable std::mutex mutex_;  // plugins log and set errors from their own threads
  std::string error_;
  std::vector<Line> lines_;
  caravan_host_v1 table_{};
};

}  // namespace caravan::conformance
