// Finds, opens and checks plugins: one loader for every kind.
//
// A name maps to libcaravan-<kind>-<name>.so, searched in CARAVAN_PLUGIN_PATH
// (colon list), then the plugin folder beside libcaravan.so, then the
// install's plugin folder; an absolute path is taken as is. Failure lists
// every path tried with the reason; there is no fallback.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "engine/plugin/plugin_file.h"

namespace caravan {

struct PluginLibrary {
  std::string path;
  void* handle = nullptr;  // dlopen handle, closed by the destructor (stays mapped)
  const caravan_plugin_descriptor* descriptor = nullptr;
  ~PluginLibrary();
};

// The folders searched for a plugin name, in order.
std::vector<std::string> plugin_search_dirs(const std::string& plugin_path);

// Loads `choice` (a name or an absolute path) of `kind` with ABI `major`.
// `source` says where the choice came from ("DMLC_ENABLE_RDMA=acme") for the
// error message. Throws a CARAVAN_ERR_PLUGIN error listing every attempt.
std::unique_ptr<PluginLibrary> load_plugin(caravan_plugin_kind kind, uint32_t major,
                                           const std::string& choice, const std::string& source,
                                           const std::string& plugin_path);
// The same for a kind whose plugins may speak any major from `oldest_major`
// to `newest_major` (the engine lifts the older ones).
std::unique_ptr<PluginLibrary> load_plugin(caravan_plugin_kind kind, uint32_t oldest_major,
                                           uint32_t newest_major, const std::string& choice,
                                           const std::string& source,
                                           const std::string& plugin_path);

}  // namespace caravan
