#include "engine/plugin/loader.h"

#include "caravan/plugin/compressor_v1.h"

#include "engine/plugin/host_services.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <sstream>

#include "engine/base/error.h"
#include "engine/base/log.h"

#ifndef CARAVAN_INSTALL_PLUGIN_DIR
#define CARAVAN_INSTALL_PLUGIN_DIR "/usr/local/lib/caravan"
#endif

namespace caravan {

PluginLibrary::~PluginLibrary() {
  if (handle) dlclose(handle);
}

const char* plugin_kind_name(caravan_plugin_kind kind) {
  // A number, not a switch over the enum: the compressor's kind is defined
  // in its own header (compressor_v1.h), plugin.h being released.
  switch (static_cast<uint32_t>(kind)) {
    case CARAVAN_PLUGIN_KIND_VAN: return "van";
    case CARAVAN_PLUGIN_KIND_REDUCER: return "reducer";
    case CARAVAN_PLUGIN_KIND_COMPRESSOR: return "compressor";
  }
  return "unknown";
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

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Opens one candidate and checks its descriptor; returns "" on success or
// the reason it was refused.
std::string try_open(const std::string& path, caravan_plugin_kind kind, uint32_t oldest_major,
                     uint32_t newest_major, PluginLibrary* lib) {
  if (!exists(path)) return "not found";
  // Refused or accepted, it stays mapped until the process exits, whatever
  // dlclose says: its constructors and those of the transport libraries it
  // pulls in have run, and these are not built to be unloaded. libfabric's
  // psm2 and infinipath dependencies allocate in their constructors and
  // never free (LeakSanitizer reports it once they are unmapped), their
  // threads and handlers could outlive the unmapping, and ThreadSanitizer
  // stops the process when a library its suppressions name is unloaded
  // (tests/sanitizers/tsan.supp).
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char* e = dlerror();
    return std::string("dlopen failed: ") + (e ? e : "unknown error");
  }
  auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(h, CARAVAN_PLUGIN_ENTRY_SYMBOL));
  std::ostringstream why;
  const caravan_plugin_descriptor* d = entry ? entry() : nullptr;
  if (!entry) {
    why << "no symbol " << CARAVAN_PLUGIN_ENTRY_SYMBOL << " (not a Caravan plugin)";
  } else if (!d) {
    why << CARAVAN_PLUGIN_ENTRY_SYMBOL << "() returned NULL";
  } else if (d->magic != CARAVAN_PLUGIN_MAGIC) {
    why << "descriptor has bad magic 0x" << std::hex << d->magic;
  } else if (d->kind != static_cast<uint32_t>(kind)) {
    why << "is a " << plugin_kind_name(static_cast<caravan_plugin_kind>(d->kind))
        << " plugin, not a " << plugin_kind_name(kind) << " plugin";
  } else if (d->abi_major < oldest_major || d->abi_major > newest_major) {
    why << "speaks plugin ABI " << d->abi_major << "." << d->abi_minor
        << "; this engine speaks " << plugin_kind_name(kind) << " ABI major "
        << (oldest_major == newest_major
                ? std::to_string(newest_major)
                : std::to_string(oldest_major) + " to " + std::to_string(newest_major));
  } else if (!d->ops || !d->name) {
    why << "descriptor has no ops table or name";
  }
  if (!why.str().empty()) {
    dlclose(h);
    return why.str();
  }
  lib->path = path;
  lib->handle = h;
  lib->descriptor = d;
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
