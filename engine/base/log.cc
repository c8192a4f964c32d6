#include "engine/base/log.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace caravan {
namespace {

std::atomic<int> g_level{CARAVAN_LOG_WARNING};
std::atomic<int> g_verbose{0};
std::mutex g_mutex;
std::string g_label;  // guarded by g_mutex

const char* level_letter(caravan_log_level l) {
  static const char* k[] = {"T", "D", "I", "W", "E", "F"};
  return (l >= 0 && l <= CARAVAN_LOG_FATAL) ? k[l] : "?";
}

}  // namespace

void Log::configure_from_env() {
  if (const char* v = std::getenv("BYTEPS_LOG_LEVEL")) {
    static const char* names[] = {"trace", "debug", "info", "warning", "error", "fatal"};
    bool found = false;
    for (int i = 0; i <= CARAVAN_LOG_FATAL; ++i) {
      if (strcasecmp(v, names[i]) == 0) {
        g_level = i;
        found = true;
      }
    }
    if (!found)
      write(CARAVAN_LOG_WARNING, std::string("BYTEPS_LOG_LEVEL='") + v +
                                     "' is not one of trace, debug, info, warning, error, fatal;"
                                     " using warning");
  }
  if (const char* v = std::getenv("PS_VERBOSE")) {
    if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0 || std::strcmp(v, "2") == 0)
      g_verbose = v[0] - '0';
    else
      write(CARAVAN_LOG_WARNING, std::string("PS_VERBOSE='") + v + "' is not 0, 1 or 2; using 0");
  }
}

bool Log::enabled(caravan_log_level level) {
  return level >= g_level.load(std::memory_order_relaxed);
}

int Log::verbose() { return g_verbose.load(std::memory_order_relaxed); }

void Log::set_node_label(const std::string& label) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_label = label;
}

void Log::write(caravan_log_level level, const std::string& message) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  struct tm tm;
  localtime_r(&tv.tv_sec, &tm);
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(tv.tv_usec / 1000));
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "[caravan %s %s %s pid %d] %s\n", level_letter(level), stamp,
               g_label.empty() ? "-" : g_label.c_str(), static_cast<int>(getpid()),
               message.c_str());
  std::fflush(stderr);
}

}  // namespace caravan
