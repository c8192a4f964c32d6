#include "van_plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace caravan::van_check {

namespace {

VanPlugin g_van;
JobPrograms g_programs;

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// <bindir>/../lib/caravan: where both the build tree and an install put
// plugins relative to this program.
std::string own_plugin_dir() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/../lib/caravan";
}

// Returns "" when `path` is a van of an ABI major this kit speaks.
std::string try_open(const std::string& path, VanPlugin* out) {
  if (!exists(path)) return "not found";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
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
  } else if (d->kind != CARAVAN_PLUGIN_KIND_VAN) {
    why << "is a plugin of kind " << d->kind << ", not a van (kind " << CARAVAN_PLUGIN_KIND_VAN
        << ")";
  } else if (d->abi_major != CARAVAN_VAN_ABI_MAJOR_V1) {
    why << "speaks van ABI " << d->abi_major << "." << d->abi_minor
        << "; this kit knows only major " << CARAVAN_VAN_ABI_MAJOR_V1
        << " (use the caravan-van-check of a Caravan that speaks it)";
  } else if (!d->ops) {
    why << "descriptor has no ops table";
  }
  if (!why.str().empty()) {
    dlclose(h);
    return why.str();
  }
  out->path = path;
  out->handle = h;
  out->entry = entry;
  out->descriptor = d;
  out->ops = static_cast<const caravan_van_ops_v1*>(d->ops);
  return "";
}

}  // namespace

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("CARAVAN_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string d;
    while (std::getline(ss, d, ':'))
      if (!d.empty()) dirs.push_back(d);
  }
  std::string own = own_plugin_dir();
  if (!own.empty()) dirs.push_back(own);
  return dirs;
}

bool open_van(const std::string& choice, VanPlugin* out, std::string* why) {
  std::vector<std::string> candidates;
  if (choice.find('/') != std::string::npos) {
    candidates.push_back(choice);
  } else {
    for (auto& dir : plugin_search_dirs())
      candidates.push_back(dir + "/libcaravan-van-" + choice + ".so");
  }
  std::ostringstream tried;
  for (auto& path : candidates) {
    std::string reason = try_open(path, out);
    if (reason.empty()) return true;
    tried << "\n  " << path << ": " << reason;
  }
  *why = "cannot load van '" + choice + "'; tried:" + tried.str();
  return false;
}

const VanPlugin& van() { return g_van; }
void set_van(VanPlugin plugin) { g_van = std::move(plugin); }
const JobPrograms& job_programs() { return g_programs; }
void set_job_programs(JobPrograms programs) { g_programs = std::move(programs); }

}  // namespace caravan::van_check
