// A plugin file opened the way the engine opens one: dlopen, the entry
// symbol, then the descriptor's magic, kind and ABI major checked before
// its ops table is trusted. Files are never closed, as the engine keeps its
// plugins for the life of the process.
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

// Opens `path` as a plugin of `kind` speaking ABI major `abi_major`.
// Returns "" on success, else why the file was refused ("not found",
// dlopen's message, "speaks van ABI 99.0; this kit knows only major 1", ...).
std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind, uint32_t abi_major,
                             PluginFile* out);

}  // namespace caravan::conformance
