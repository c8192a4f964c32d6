// One log sink for the whole process: level from BYTEPS_LOG_LEVEL, control
// plane detail from PS_VERBOSE, every line tagged with this node's role.
#pragma once

#include <sstream>
#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan {

class Log {
 public:
  // Reads BYTEPS_LOG_LEVEL and PS_VERBOSE; malformed values are reported
  // and the defaults kept, since logging must work before config is valid.
  static void configure_from_env();
  static bool enabled(caravan_log_level level);
  static void write(caravan_log_level level, const std::string& message);
  // "worker 1", "server 0", "scheduler": set once the rank is known.
  static void set_node_label(const std::string& label);
  // PS_VERBOSE: 0 quiet, 1 control plane, 2 every message.
  static int verbose();
};

class LogLine {
 public:
  explicit LogLine(caravan_log_level level) : level_(level) {}
  ~LogLine() { Log::write(level_, stream_.str()); }
  template <class T>
  LogLine& operator<<(const T& v) {
    stream_ << v;
    return *this;
  }

 private:
  caravan_log_level level_;
  std::ostringstream stream_;
};

}  // namespace caravan

#define CARAVAN_LOG(level)                               \
  if (!::caravan::Log::enabled(::CARAVAN_LOG_##level)) { \
  } else                                                 \
    ::caravan::LogLine(::CARAVAN_LOG_##level)

// Control-plane events (PS_VERBOSE >= 1) and per-message traces (>= 2) are
// shown at info level whatever BYTEPS_LOG_LEVEL says.
#define CARAVAN_VLOG(n)                  \
  if (::caravan::Log::verbose() < (n)) { \
  } else                                 \
    ::caravan::LogLine(::CARAVAN_LOG_INFO)
