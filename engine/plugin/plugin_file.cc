#include "engine/plugin/plugin_file.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <sstream>

#include "caravan/plugin/compressor_v1.h"

namespace caravan {

const char* plugin_kind_name(caravan_plugin_kind kind) {
  // A number, not a switch over the enum: the compressor's kind is defined
  // in its own header (compressor_v1.h), plugin.h being released.
  switch (static_cast<uint32_t>(kind)) {
    case CARAVAN_PLUGIN_KIND_VAN:
      return "van";
    case CARAVAN_PLUGIN_KIND_REDUCER:
      return "reducer";
    case CARAVAN_PLUGIN_KIND_COMPRESSOR:
      return "compressor";
  }
  return "unknown";
}

std::string open_plugin_file(const std::string& path, caravan_plugin_kind kind,
                             uint32_t oldest_major, uint32_t newest_major, const char* checker,
                             OpenedPlugin* out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "not found";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    const char* e = dlerror();
    return std::string("dlopen failed: ") + (e ? e : "unknown error");
  }
  auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(h, CARAVAN_PLUGIN_ENTRY_SYMBOL));
  const caravan_plugin_descriptor* d = entry ? entry() : nullptr;
  std::ostringstream why;
  if (!entry) {
    why << "no symbol " << CARAVAN_PLUGIN_ENTRY_SYMBOL << " (not a Caravan plugin)";
  } else if (!d) {
    why << CARAVAN_PLUGIN_ENTRY_SYMBOL << "() returned NULL";
  } else if (d->magic != CARAVAN_PLUGIN_MAGIC) {
    why << "descriptor has bad magic 0x" << std::hex << d->magic << " (want 0x"
        << CARAVAN_PLUGIN_MAGIC << ")";
  } else if (d->kind != static_cast<uint32_t>(kind)) {
    why << "is a " << plugin_kind_name(static_cast<caravan_plugin_kind>(d->kind))
        << " plugin, not a " << plugin_kind_name(kind) << " plugin (kind " << d->kind << ", not "
        << kind << ")";
  } else if (d->abi_major < oldest_major || d->abi_major > newest_major) {
    why << "speaks " << plugin_kind_name(kind) << " ABI " << d->abi_major << "." << d->abi_minor
        << "; " << checker << " knows ";
    if (oldest_major == newest_major)
      why << "only major " << newest_major;
    else
      why << "majors " << oldest_major << " to " << newest_major;
  } else if (!d->ops || !d->name) {
    why << "descriptor has no ops table or name";
  }
  if (!why.str().empty()) {
    dlclose(h);
    return why.str();
  }
  out->handle = h;
  out->entry = entry;
  out->descriptor = d;
  return "";
}

}  // namespace caravan
