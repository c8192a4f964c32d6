// Adapts a reducer plugin's C table (ABI major 1) to the engine's Reducer.
#include "engine/base/error.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "engine/reducer/reducer.h"

#include "caravan/plugin/reducer_v1.h"

namespace caravan {

namespace {

class PluginReducer final : public Reducer {
 public:
  explicit PluginReducer(std::unique_ptr<PluginLibrary> lib)
      : lib_(std::move(lib)),
        ops_(static_cast<const caravan_reducer_ops_v1*>(lib_->descriptor->ops)),
        host_(CARAVAN_PLUGIN_KIND_REDUCER, lib_->descriptor->name) {
    std::string name = lib_->descriptor->name;
    if (ops_->struct_size < sizeof(caravan_reducer_ops_v1))
      throw Error(CARAVAN_ERR_PLUGIN, "reducer plugin '" + name + "' (" + lib_->path +
                                          ") has a truncated ops table");
    caravan_status s = ops_->init(host_.table(), &ctx_);
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_PLUGIN, "reducer plugin '" + name + "' (" + lib_->path +
                                          ") failed to start: " + describe_plugin_failure(s));
    caravan_reducer_properties_v1 p{};
    p.struct_size = sizeof p;
    description_ = name;
    if (ops_->properties(ctx_, &p) == CARAVAN_STATUS_OK && p.kernel)
      description_ += std::string(" (") + p.kernel + ")";
  }
  ~PluginReducer() override {
    if (ctx_) ops_->finalize(ctx_);
  }
  const std::string& description() const override { return description_; }
  void sum(void* dst, const void* src, size_t count, caravan_dtype dtype) override {
    check(ops_->sum(ctx_, dst, src, count, dtype, nullptr), count, dtype);
  }
  void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                caravan_dtype dtype) override {
    check(ops_->sum_many(ctx_, dst, srcs, num_srcs, count, dtype, nullptr), count, dtype);
  }

 private:
  void check(caravan_status s, size_t count, caravan_dtype dtype) const {
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_INTERNAL, "reducer '" + description_ + "' failed to sum " +
                                            std::to_string(count) + " " + dtype_name(dtype) +
                                            ": " + describe_plugin_failure(s));
  }

  std::unique_ptr<PluginLibrary> lib_;
  const caravan_reducer_ops_v1* ops_;
  HostServices host_;
  void* ctx_ = nullptr;
  std::string description_;
};

}  // namespace

std::unique_ptr<Reducer> open_reducer(const std::string& choice, const std::string& plugin_path) {
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, choice,
                         "CARAVAN_REDUCER=" + choice, plugin_path);
  return std::make_unique<PluginReducer>(std::move(lib));
}

}  // namespace caravan
