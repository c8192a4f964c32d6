// The caravan_host_v1 table the engine hands to each plugin instance:
// logging tagged with the plugin's name, parameters read from
// CARAVAN_<KIND>_<NAME>_<PARAM>, and a per-thread error text.
#pragma once

#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan {

class HostServices {
 public:
  HostServices(caravan_plugin_kind kind, const std::string& plugin_name);
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  const caravan_host_v1* table() const { return &table_; }
  // The environment variable a plugin parameter maps to.
  std::string param_variable(const std::string& param) const;
  // Takes the text the plugin set with set_error() on this thread, or "".
  static std::string take_error();

 private:
  static void log(void* ctx, caravan_log_level level, const char* message);
  static const char* get_param(void* ctx, const char* name);
  static const char* get_env(void* ctx, const char* name);
  static void set_error(void* ctx, const char* message);

  std::string label_;   // "van zmq"
  std::string prefix_;  // "CARAVAN_VAN_ZMQ_"
  caravan_host_v1 table_;
};

// "CARAVAN_REDUCER_CPU_": what a plugin's parameter names are prefixed with
// in the environment.
std::string plugin_param_prefix(caravan_plugin_kind kind, const std::string& plugin_name);

// Once per process and plugin: warns of each set variable with the
// plugin's prefix that names none of its declared parameters (with the
// nearest one when it looks like a typo).
void warn_undeclared_params(caravan_plugin_kind kind, const caravan_plugin_descriptor& d);

// "plugin says: ..." when the plugin explained itself, else the status name.
std::string describe_plugin_failure(caravan_status status);
const char* plugin_status_name(caravan_status status);

}  // namespace caravan
