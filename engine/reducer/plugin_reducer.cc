// Adapts a reducer plugin's C table (ABI major 1) to the engine's Reducer.
#include <cstddef>
#include <string>
#include <utility>

#include "caravan/plugin/reducer_v1.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "engine/reducer/reducer.h"

namespace caravan {

namespace {

// The engine calls init, finalize, properties, sum and sum_many, so a table
// that reaches sum_many is enough: a plugin built against any 1.x header
// loads (plugin.h's append-only rule), whatever was appended since.
constexpr size_t kUsedTableSize =
    offsetof(caravan_reducer_ops_v1, sum_many) + sizeof(caravan_reducer_ops_v1::sum_many);

class PluginReducer final : public Reducer {
 public:
  explicit PluginReducer(std::unique_ptr<PluginLibrary> lib)
      : lib_(std::move(lib)),
        ops_(static_cast<const caravan_reducer_ops_v1*>(lib_->descriptor->ops)),
        name_(lib_->descriptor->name),
        host_(CARAVAN_PLUGIN_KIND_REDUCER, name_) {
    check_table();
    caravan_status s = ops_->init(host_.table(), &ctx_);
    if (s != CARAVAN_STATUS_OK) refuse("failed to start: " + describe_plugin_failure(s));
    try {
      check_properties();
    } catch (...) {
      ops_->finalize(ctx_);  // no destructor runs for a constructor that throws
      throw;
    }
  }
  ~PluginReducer() override {
    if (ctx_) ops_->finalize(ctx_);
  }
  const std::string& description() const override { return description_; }
  // No stream: the engine hands host memory only, which check_properties
  // made sure the reducer can sum.
  void sum(void* dst, const void* src, size_t count, caravan_dtype dtype) override {
    check(ops_->sum(ctx_, dst, src, count, dtype, nullptr), count, dtype);
  }
  void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                caravan_dtype dtype) override {
    check(ops_->sum_many(ctx_, dst, srcs, num_srcs, count, dtype, nullptr), count, dtype);
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw Error(CARAVAN_ERR_PLUGIN, "reducer plugin '" + name_ + "' (" + lib_->path + ") " + why);
  }

  void check_table() const {
    if (ops_->struct_size < kUsedTableSize)
      refuse("has an ops table of " + std::to_string(ops_->struct_size) + " bytes, too short for " +
             "the entries the engine calls (init to sum_many, " + std::to_string(kUsedTableSize) +
             " bytes; a 1.0 table has " + std::to_string(CARAVAN_REDUCER_OPS_V1_0_SIZE) + ")");
    const char* missing = !ops_->init         ? "init"
                          : !ops_->finalize   ? "finalize"
                          : !ops_->properties ? "properties"
                          : !ops_->sum        ? "sum"
                          : !ops_->sum_many   ? "sum_many"
                                              : nullptr;
    if (missing) refuse("has no " + std::string(missing) + " entry: it is NULL in its ops table");
  }

  void check_properties() {
    caravan_reducer_properties_v1 p{};
    p.struct_size = sizeof p;
    caravan_status s = ops_->properties(ctx_, &p);
    if (s != CARAVAN_STATUS_OK)
      refuse("failed to report its properties: " + describe_plugin_failure(s));
    // A device-memory reducer would be handed host pointers and no stream.
    if (!(p.caps & CARAVAN_REDUCER_CAP_HOST_MEMORY))
      refuse("cannot sum host memory (its capabilities: " + reducer_capability_names(p.caps) +
             "), and the engine hands reducers host memory only: choose a host reducer such "
             "as CARAVAN_REDUCER=cpu");
    description_ = name_ + (p.kernel ? std::string(" (") + p.kernel + ")" : "");
  }

  void check(caravan_status s, size_t count, caravan_dtype dtype) const {
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_INTERNAL, "reducer '" + description_ + "' failed to sum " +
                                            std::to_string(count) + " " + dtype_name(dtype) + ": " +
                                            describe_plugin_failure(s));
  }

  std::unique_ptr<PluginLibrary> lib_;
  const caravan_reducer_ops_v1* ops_;
  std::string name_;
  HostServices host_;
  void* ctx_ = nullptr;
  std::string description_;
};

}  // namespace

std::string reducer_capability_names(uint64_t caps) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {CARAVAN_REDUCER_CAP_HOST_MEMORY, "host memory"},
      {CARAVAN_REDUCER_CAP_DEVICE_MEMORY, "device memory"},
      {CARAVAN_REDUCER_CAP_ASYNC_STREAM, "async stream"},
      {CARAVAN_REDUCER_CAP_LOCAL_GROUP, "local group"},
      {CARAVAN_REDUCER_CAP_DEVICE_SERVICES, "device services"},
      {CARAVAN_REDUCER_CAP_DEVICE_IPC, "device IPC"}};
  std::string text;
  for (const auto& [bit, name] : kNames)
    if (caps & bit) text += (text.empty() ? "" : ", ") + std::string(name);
  return text.empty() ? "none" : text;
}

std::unique_ptr<Reducer> open_reducer(const std::string& choice, const std::string& plugin_path) {
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, choice,
                         "CARAVAN_REDUCER=" + choice, plugin_path);
  return std::make_unique<PluginReducer>(std::move(lib));
}

}  // namespace caravan
