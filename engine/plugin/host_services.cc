#include "engine/plugin/host_services.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <set>
#include <vector>

#include "engine/base/log.h"
#include "engine/base/settings.h"
#include "engine/plugin/loader.h"

extern char** environ;

namespace caravan {
namespace {
thread_local std::string t_error;

std::string upper(std::string s) {
  for (auto& c : s)
    c = (c == '-') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

HostServices::HostServices(caravan_plugin_kind kind, const std::string& plugin_name)
    : label_(std::string(plugin_kind_name(kind)) + " " + plugin_name),
      prefix_(plugin_param_prefix(kind, plugin_name)) {
  table_.struct_size = sizeof(caravan_host_v1);
  table_.host_ctx = this;
  table_.log = &HostServices::log;
  table_.get_param = &HostServices::get_param;
  table_.get_env = &HostServices::get_env;
  table_.set_error = &HostServices::set_error;
}

std::string HostServices::param_variable(const std::string& param) const {
  return prefix_ + upper(param);
}

std::string HostServices::take_error() {
  std::string e;
  e.swap(t_error);
  return e;
}

void HostServices::log(void* ctx, caravan_log_level level, const char* message) {
  auto* self = static_cast<HostServices*>(ctx);
  if (Log::enabled(level)) Log::write(level, self->label_ + ": " + (message ? message : ""));
}

const char* HostServices::get_param(void* ctx, const char* name) {
  if (!name) return nullptr;
  auto* self = static_cast<HostServices*>(ctx);
  const char* v = std::getenv(self->param_variable(name).c_str());
  return (v && *v) ? v : nullptr;
}

const char* HostServices::get_env(void* ctx, const char* name) {
  if (!name) return nullptr;
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

void HostServices::set_error(void* ctx, const char* message) { t_error = message ? message : ""; }

const char* plugin_status_name(caravan_status s) {
  switch (s) {
    case CARAVAN_STATUS_OK:
      return "ok";
    case CARAVAN_STATUS_INVALID_ARGUMENT:
      return "invalid argument";
    case CARAVAN_STATUS_UNAVAILABLE:
      return "unavailable";
    case CARAVAN_STATUS_NO_MEMORY:
      return "out of memory";
    case CARAVAN_STATUS_IO:
      return "I/O error";
    case CARAVAN_STATUS_TIMEOUT:
      return "timeout";
    case CARAVAN_STATUS_UNSUPPORTED:
      return "unsupported";
    case CARAVAN_STATUS_CLOSED:
      return "closed";
    case CARAVAN_STATUS_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

std::string describe_plugin_failure(caravan_status status) {
  std::string detail = HostServices::take_error();
  std::string s = plugin_status_name(status);
  return detail.empty() ? s : s + ": " + detail;
}

}  // namespace caravan

namespace caravan {

std::string plugin_param_prefix(caravan_plugin_kind kind, const std::string& plugin_name) {
  return "CARAVAN_" + upper(plugin_kind_name(kind)) + "_" + upper(plugin_name) + "_";
}

void warn_undeclared_params(caravan_plugin_kind kind, const caravan_plugin_descriptor& d) {
  static std::mutex mu;
  static std::set<std::string> warned;  // plugins already checked
  std::string prefix = plugin_param_prefix(kind, d.name ? d.name : "");
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(prefix).second) return;
  }
  std::vector<std::string> declared;
  for (size_t i = 0; i < d.num_params && d.params; ++i)
    if (d.params[i].name) declared.push_back(prefix + upper(d.params[i].name));
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (std::find(declared.begin(), declared.end(), name) != declared.end()) continue;
    std::string near = nearest_name(name, declared);
    CARAVAN_LOG(WARNING) << name << " is set but " << plugin_kind_name(kind) << " plugin '"
                         << d.name << "' has no such parameter"
                         << (near.empty() ? " (caravan-info lists its parameters)"
                                          : "; did you mean " + near + "?");
  }
}

}  // namespace caravan
