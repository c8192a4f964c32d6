#include "plugin_file.h"

#include "engine/plugin/plugin_file.h"

namespace caravan::conformance {

std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind,
                             uint32_t oldest_major, uint32_t newest_major, PluginFile* out) {
  OpenedPlugin opened;
  std::string why =
      caravan::open_plugin_file(path, kind, oldest_major, newest_major, "this kit", &opened);
  if (!why.empty()) return why;
  out->path = path;
  out->handle = opened.handle;
  out->entry = opened.entry;
  out->descriptor = opened.descriptor;
  out->ops = opened.descriptor->ops;
  return "";
}

}  // namespace caravan::conformance
