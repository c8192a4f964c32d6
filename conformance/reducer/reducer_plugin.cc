#include "reducer_plugin.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

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
  p.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p.handle) {
    p.error = std::string("dlopen: ") + dlerror();
    return p;
  }
  auto entry =
      reinterpret_cast<caravan_plugin_entry_fn>(dlsym(p.handle, CARAVAN_PLUGIN_ENTRY_SYMBOL));
  if (!entry) {
    p.error = "no " CARAVAN_PLUGIN_ENTRY_SYMBOL " symbol";
    return p;
  }
  p.descriptor = entry();
  const caravan_plugin_descriptor* d = p.descriptor;
  if (!d || d->magic != CARAVAN_PLUGIN_MAGIC || d->kind != CARAVAN_PLUGIN_KIND_REDUCER ||
      d->abi_major != CARAVAN_REDUCER_ABI_MAJOR_V1 || !d->ops) {
    p.error = "the descriptor is not that of a v1 reducer";
    return p;
  }
  p.ops = static_cast<const caravan_reducer_ops_v1*>(d->ops);
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

FakeHost::FakeHost(std::map<std::string, std::string> params) : params_(std::move(params)) {
  table_.struct_size = sizeof table_;
  table_.host_ctx = this;
  table_.log = [](void*, caravan_log_level, const char*) {};
  table_.get_param = [](void* c, const char* name) -> const char* {
    auto& p = static_cast<FakeHost*>(c)->params_;
    auto it = p.find(name);
    return it == p.end() ? nullptr : it->second.c_str();
  };
  table_.get_env = [](void*, const char* name) -> const char* { return std::getenv(name); };
  table_.set_error = [](void* c, const char* m) {
    auto* h = static_cast<FakeHost*>(c);
    std::lock_guard<std::mutex> lock(h->mutex_);
    h->error_ = m ? m : "";
  };
}

std::string FakeHost::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void FakeHost::clear_error() {
  std::lock_guard<std::mutex> lock(mutex_);
  error_.clear();
}

Instance::Instance(const caravan_reducer_ops_v1& o, std::map<std::string, std::string> params)
    : ops(o), host(std::move(params)) {
  status = ops.init(host.table(), &ctx);
  if (status != CARAVAN_STATUS_OK) ctx = nullptr;
}

Instance::~Instance() {
  if (ctx) {
    EXPECT_EQ(ops.finalize(ctx), CARAVAN_STATUS_OK) << host.error();
  }
}

}  // namespace caravan::conformance
