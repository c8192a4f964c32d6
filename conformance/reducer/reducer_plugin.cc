#include "reducer_plugin.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "conformance/host/plugin_file.h"
#include "reducer_plugins.h"  // generated: CARAVAN_CONFORMANCE_PLUGIN_PATHS

namespace caravan::conformance {

const LoadedPlugin& load_plugin(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LoadedPlugin>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[path];
  if (slot) return *slot;
  slot = std::make_unique<LoadedPlugin>();
  LoadedPlugin& p = *slot;
  p.path = path;
  PluginFile file;
  p.error = open_plugin_file(path, CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, &file);
  if (!p.error.empty()) return p;
  p.handle = file.handle;
  p.descriptor = file.descriptor;
  p.ops = static_cast<const caravan_reducer_ops_v1*>(file.ops);
  return p;
}

std::vector<Variant> all_variants() {
  static const char* const kPaths[] = {CARAVAN_CONFORMANCE_PLUGIN_PATHS nullptr};
  std::vector<Variant> out;
  for (const char* const* p = kPaths; *p; ++p) {
    std::string path = *p;
    std::string file = path.substr(path.find_last_of('/') + 1);
    const std::string prefix = "libcaravan-reducer-";
    std::string name = file.substr(prefix.size(), file.find('.') - prefix.size());
    if (name == "cpu") {
      for (const char* kernel : {"auto", "avx2", "portable", "avx512"})
        out.push_back({path, name, name + "_" + kernel, {{"KERNEL", kernel}}});
    } else {
      out.push_back({path, name, name, {}});
    }
  }
  return out;
}

Instance::Instance(const caravan_reducer_ops_v1& o, std::map<std::string, std::string> params)
    : ops(o), host("reducer", std::move(params)) {
  status = ops.init(host.table(), &ctx);
  if (status != CARAVAN_STATUS_OK) ctx = nullptr;
}

Instance::~Instance() {
  if (ctx) {
    EXPECT_EQ(ops.finalize(ctx), CARAVAN_STATUS_OK) << host.error();
  }
}

}  // namespace caravan::conformance
