#include "reducer_plugin.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <mutex>

#include "conformance/host/plugin_file.h"

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
  p.error =
      open_plugin_file(path, CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, &file);
  if (!p.error.empty()) return p;
  p.handle = file.handle;
  p.descriptor = file.descriptor;
  p.ops = static_cast<const caravan_reducer_ops_v1*>(file.ops);
  return p;
}

Instance::Instance(const caravan_reducer_ops_v1& o, Params params, std::optional<Params> env)
    : ops(o), host("reducer", std::move(params), std::move(env)) {
  status = ops.init(host.table(), &ctx);
  if (status != CARAVAN_STATUS_OK) ctx = nullptr;
}

Instance::~Instance() {
  if (ctx) {
    EXPECT_EQ(ops.finalize(ctx), CARAVAN_STATUS_OK) << host.error();
  }
}

}  // namespace caravan::conformance
