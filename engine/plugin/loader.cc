#include "engine/plugin/loader.h"

#include <dlfcn.h>

#include <sstream>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/plugin/host_services.h"

#ifndef CARAVAN_INSTALL_PLUGIN_DIR
#define CARAVAN_INSTALL_PLUGIN_DIR "/usr/local/lib/caravan"
#endif

namespace caravan {

PluginLibrary::~PluginLibrary() {
  if (handle) dlclose(handle);
}

namespace {

std::string engine_dir() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&plugin_search_dirs), &info) == 0 || !info.dli_fname)
    return "";
  std::string p = info.dli_fname;
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// Opens one candidate and checks its descriptor; returns "" on success or
// the reason it was refused.
std::string try_open(const std::string& path, caravan_plugin_kind kind, uint32_t oldest_major,
                     uint32_t newest_major, PluginLibrary* lib) {
  OpenedPlugin opened;
  std::string why =
      open_plugin_file(path, kind, oldest_major, newest_major, "this engine", &opened);
  if (!why.empty()) return why;
  lib->path = path;
  lib->handle = opened.handle;
  lib->descriptor = opened.descriptor;
  return "";
}

}  // namespace

std::vector<std::string> plugin_search_dirs(const std::string& plugin_path) {
  std::vector<std::string> dirs;
  std::stringstream ss(plugin_path);
  std::string d;
  while (std::getline(ss, d, ':'))
    if (!d.empty()) dirs.push_back(d);
  std::string here = engine_dir();
  if (!here.empty()) dirs.push_back(here + "/caravan");
  dirs.push_back(CARAVAN_INSTALL_PLUGIN_DIR);
  return dirs;
}

std::unique_ptr<PluginLibrary> load_plugin(caravan_plugin_kind kind, uint32_t major,
                                           const std::string& choice, const std::string& source,
                                           const std::string& plugin_path) {
  return load_plugin(kind, major, major, choice, source, plugin_path);
}

std::unique_ptr<PluginLibrary> load_plugin(caravan_plugin_kind kind, uint32_t oldest_major,
                                           uint32_t newest_major, const std::string& choice,
                                           const std::string& source,
                                           const std::string& plugin_path) {
  std::vector<std::string> candidates;
  if (!choice.empty() && choice[0] == '/') {
    candidates.push_back(choice);
  } else {
    std::string file = std::string("libcaravan-") + plugin_kind_name(kind) + "-" + choice + ".so";
    for (auto& dir : plugin_search_dirs(plugin_path)) candidates.push_back(dir + "/" + file);
  }
  std::ostringstream tried;
  auto lib = std::make_unique<PluginLibrary>();
  for (auto& path : candidates) {
    std::string why = try_open(path, kind, oldest_major, newest_major, lib.get());
    if (why.empty()) {
      CARAVAN_LOG(INFO) << "loaded " << plugin_kind_name(kind) << " plugin '"
                        << lib->descriptor->name << "' " << lib->descriptor->version << " (ABI "
                        << lib->descriptor->abi_major << "." << lib->descriptor->abi_minor
                        << ") from " << path;
      warn_undeclared_params(kind, *lib->descriptor);
      return lib;
    }
    tried << "\n  " << path << ": " << why;
  }
  throw Error(CARAVAN_ERR_PLUGIN, std::string("cannot load ") + plugin_kind_name(kind) +
                                      " plugin '" + choice + "' (chosen by " + source +
                                      "); tried:" + tried.str());
}

}  // namespace caravan
