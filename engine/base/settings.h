// Every environment variable Caravan reads (DMLC_*, BYTEPS_*, PS_*,
// CARAVAN_*) declared once, with what applies when it is unset and what it
// means: caravan-info lists them, the README's table is checked against them
// and against the sources that read them (Settings.* in settings_test), and a
// set variable with one of those prefixes that none of them names is warned
// about once per process, with the name it most likely meant.
// A plugin's parameters (CARAVAN_<KIND>_<PLUGIN>_<PARAM>) are declared by the
// plugin itself; the loader checks those (plugin/loader.cc).
#pragma once

#include <string>
#include <vector>

namespace caravan {

struct Setting {
  const char* name;
  const char* unset;  // what applies when it is not set
  const char* meaning;
};

// In the order of the README's table.
const std::vector<Setting>& known_settings();

// BytePS variables that Caravan does not implement, and what to do instead.
struct UnsupportedSetting {
  const char* name;
  const char* instead;
};
const std::vector<UnsupportedSetting>& unsupported_settings();

// The name among `names` nearest `name` by edit distance when it looks like
// a typo of it (at most a quarter of its letters, and 3, differ); "" if none.
std::string nearest_name(const std::string& name, const std::vector<std::string>& names);

// One warning for each variable of `environment` ("NAME=value" strings)
// that has a DMLC_, BYTEPS_, PS_ or CARAVAN_ prefix and is not a known
// setting: why BytePS's is not implemented, or the name it likely meant.
// CARAVAN_VAN_* and CARAVAN_REDUCER_* are plugin parameters: skipped.
std::vector<std::string> unknown_settings(const std::vector<std::string>& environment);

// unknown_settings() of this process's environment, logged at warning
// level; once per process.
void warn_unknown_settings();

}  // namespace caravan
