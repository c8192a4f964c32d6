// The van under test: found by name or path the way the engine finds it,
// opened, and its descriptor checked before any test drives it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "caravan/plugin/van_v1.h"
#include "caravan/plugin/van_v2.h"

namespace caravan::van_check {

struct VanPlugin {
  std::string path;
  caravan_plugin_entry_fn entry = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
  uint32_t major = 0;  // the van ABI major the plugin speaks: 1 or 2
  // The plugin's own table, for the checks of the table itself: one of the
  // two, by major. Only VanInstance calls a van.
  const caravan_van_ops_v1* ops_v1 = nullptr;
  const caravan_van_ops_v2* ops_v2 = nullptr;
  // What VanInstance drives: ops_v2, or the engine's lift over ops_v1
  // (engine/van/van_v1_lift.h), as the engine drives an ABI 1 van.
  const caravan_van_ops_v2* driven = nullptr;
  // Plugin parameters every instance gets (--param NAME=VALUE), below those
  // a test gives its own instance.
  std::map<std::string, std::string> params;
};

// Where a bare name is looked for: CARAVAN_PLUGIN_PATH, then the plugin
// folder of the install or build tree this program lives in.
std::vector<std::string> plugin_search_dirs();

// Opens `choice` (a name such as "zmq", or a path). Returns false with
// `why` naming every path tried and the reason each was refused.
bool open_van(const std::string& choice, VanPlugin* out, std::string* why);

// For a van's own tests: the van built at `path`, opened on first use and
// kept. A van that cannot be opened ends the program with the reason, since
// no test of it could run.
const VanPlugin& van_file(const std::string& path);

}  // namespace caravan::van_check
