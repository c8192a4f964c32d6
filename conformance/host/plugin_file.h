// A plugin file opened the way the engine opens one, by the engine's own
// check (engine/plugin/plugin_file.h): dlopen, the entry symbol, then the
// descriptor's magic, kind, ABI major, ops table and name. Files are never
// closed, as the engine keeps its plugins for the life of the process.
#pragma once

#include <cstdint>
#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan::conformance {

struct PluginFile {
  std::string path;
  void* handle = nullptr;
  caravan_plugin_entry_fn entry = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
  const void* ops = nullptr;  // the table for `kind` and `abi_major`
};

// Opens `path` as a plugin of `kind` speaking an ABI major from
// `oldest_major` to `newest_major`. Returns "" on success, else why the
// file was refused ("not found", dlopen's message, "speaks van ABI 99.0;
// this kit knows majors 1 to 2", ...).
std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind,
                             uint32_t oldest_major, uint32_t newest_major, PluginFile* out);
// The same for one major.
inline std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind,
                                    uint32_t abi_major, PluginFile* out) {
  return open_plugin_file(path, kind, abi_major, abi_major, out);
}

}  // namespace caravan::conformance
