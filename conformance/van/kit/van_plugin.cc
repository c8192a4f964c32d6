#include "van_plugin.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "conformance/host/plugin_file.h"
#include "engine/van/van_v1_lift.h"

namespace caravan::van_check {

namespace {

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
  conformance::PluginFile file;
  std::string why = conformance::open_plugin_file(
      path, CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V1, CARAVAN_VAN_ABI_MAJOR_V2, &file);
  if (!why.empty()) return why;
  out->path = file.path;
  out->entry = file.entry;
  out->descriptor = file.descriptor;
  out->major = file.descriptor->abi_major;
  if (out->major == CARAVAN_VAN_ABI_MAJOR_V1) {
    out->ops_v1 = static_cast<const caravan_van_ops_v1*>(file.ops);
    out->driven = van_v1_lifted_ops();
  } else {
    out->ops_v2 = static_cast<const caravan_van_ops_v2*>(file.ops);
    out->driven = out->ops_v2;
  }
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

const VanPlugin& van_file(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<VanPlugin>> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = opened[path];
  if (!slot) {
    slot = std::make_unique<VanPlugin>();
    std::string why;
    if (!open_van(path, slot.get(), &why)) {
      std::fprintf(stderr, "%s\n", why.c_str());
      std::exit(1);
    }
  }
  return *slot;
}

}  // namespace caravan::van_check
