// One plugin file opened and checked: dlopen, the entry symbol, then the
// descriptor's magic, kind, ABI major, ops table and name, before anything
// in it is trusted. The engine's loader and the conformance kits both open
// files this way (a small library of its own, caravan_plugin_file), so a
// file the kit accepts is one the engine accepts, refused for the same
// reasons in the same words.
#pragma once

#include <cstdint>
#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan {

// "van", "reducer", "compressor" or "unknown".
const char* plugin_kind_name(caravan_plugin_kind kind);

struct OpenedPlugin {
  void* handle = nullptr;  // dlopen handle
  caravan_plugin_entry_fn entry = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
};

// Opens `path` as a plugin of `kind` speaking an ABI major from
// `oldest_major` to `newest_major`. Returns "" and fills `out` on success,
// else why the file was refused ("not found", dlopen's message, "speaks van
// ABI 99.0; this kit knows majors 1 to 2", ...), `checker` naming who
// refused it ("this engine", "this kit"). Refused or accepted, the file
// stays mapped until the process exits (RTLD_NODELETE): its constructors
// and those of the transport libraries it pulls in have run, and these are
// not built to be unloaded (libfabric's psm2 and infinipath dependencies
// allocate in their constructors and never free, their threads and
// handlers could outlive the unmapping, and ThreadSanitizer stops the
// process when a library its suppressions name is unloaded).
std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind,
                             uint32_t oldest_major, uint32_t newest_major, const char* checker,
                             OpenedPlugin* out);

}  // namespace caravan
