// Adapts the device memory services of a reducer plugin's C table (ABI 1.1)
// to the engine's DeviceMemory.
#include "engine/reducer/device_memory.h"

#include <cstddef>
#include <string>
#include <thread>
#include <utility>

#include "caravan/plugin/reducer_v1.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"

namespace caravan {
namespace {

// The engine calls everything up to event_done, the last 1.1 entry.
constexpr size_t kUsedTableSize =
    offsetof(caravan_reducer_ops_v1, event_done) + sizeof(caravan_reducer_ops_v1::event_done);
// The IPC entries are optional: used when the table reaches them all.
constexpr size_t kIpcTableSize = offsetof(caravan_reducer_ops_v1, ipc_event_open) +
                                 sizeof(caravan_reducer_ops_v1::ipc_event_open);

class PluginDeviceMemory final : public DeviceMemory {
 public:
  PluginDeviceMemory(std::unique_ptr<PluginLibrary> lib, std::string source)
      : lib_(std::move(lib)),
        ops_(static_cast<const caravan_reducer_ops_v1*>(lib_->descriptor->ops)),
        name_(lib_->descriptor->name),
        source_(std::move(source)),
        host_(CARAVAN_PLUGIN_KIND_REDUCER, name_) {
    check_table();
    caravan_status s = ops_->init(host_.table(), &ctx_);
    if (s != CARAVAN_STATUS_OK) refuse("failed to start: " + describe_plugin_failure(s));
    caravan_reducer_properties_v1 p{};
    p.struct_size = sizeof p;
    s = ops_->properties(ctx_, &p);
    const uint64_t needed = CARAVAN_REDUCER_CAP_DEVICE_MEMORY | CARAVAN_REDUCER_CAP_DEVICE_SERVICES;
    std::string why =
        s != CARAVAN_STATUS_OK ? "failed to report its properties: " + describe_plugin_failure(s)
        : (p.caps & needed) != needed ? "does not offer device memory services (capability bits " +
                                            std::to_string(p.caps) + ")"
                                      : "";
    if (!why.empty()) {
      ops_->finalize(ctx_);
      ctx_ = nullptr;
      refuse(why);
    }
    description_ = name_ + (p.kernel ? std::string(" (") + p.kernel + ")" : "");
    has_ipc_ = (p.caps & CARAVAN_REDUCER_CAP_DEVICE_IPC) && ops_->struct_size >= kIpcTableSize &&
               ops_->device_alloc && ops_->device_free && ops_->ipc_export && ops_->ipc_open &&
               ops_->ipc_close && ops_->ipc_event_create && ops_->ipc_event_open;
  }
  ~PluginDeviceMemory() override {
    if (ctx_) ops_->finalize(ctx_);
  }

  const std::string& description() const override { return description_; }
  int device_of(const void* ptr) override {
    int device = -1;
    check(ops_->memory_device(ctx_, ptr, &device), "memory_device");
    return device;
  }
  void* host_alloc(size_t bytes) override {
    void* p = nullptr;
    check(ops_->host_alloc(ctx_, bytes, &p), "host_alloc of " + std::to_string(bytes) + " bytes");
    return p;
  }
  void host_free(void* ptr) override { check(ops_->host_free(ctx_, ptr), "host_free"); }
  Stream stream_create() override {
    void* s = nullptr;
    check(ops_->stream_create(ctx_, &s), "stream_create");
    return s;
  }
  void stream_destroy(Stream s) override { check(ops_->stream_destroy(ctx_, s), "stream_destroy"); }
  void copy(void* dst, const void* src, size_t bytes, Stream s) override {
    check(ops_->copy(ctx_, dst, src, bytes, s), "copy of " + std::to_string(bytes) + " bytes");
  }
  Event event_create() override {
    void* e = nullptr;
    check(ops_->event_create(ctx_, &e), "event_create");
    return e;
  }
  void event_destroy(Event e) override { check(ops_->event_destroy(ctx_, e), "event_destroy"); }
  void event_record(Event e, Stream s) override {
    check(ops_->event_record(ctx_, e, s), "event_record");
  }
  void stream_wait(Stream s, Event e) override {
    check(ops_->stream_wait(ctx_, s, e), "stream_wait");
  }
  bool event_done(Event e) override {
    int done = 0;
    check(ops_->event_done(ctx_, e, &done), "event_done");
    return done != 0;
  }
  void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count, int dtype,
                Stream s) override {
    check(ops_->sum_many(ctx_, dst, srcs, num_srcs, count, static_cast<caravan_dtype>(dtype), s),
          "sum_many of " + std::to_string(num_srcs) + " arrays of " + std::to_string(count) + " " +
              dtype_name(dtype));
  }

  bool has_ipc() const override { return has_ipc_; }
  void* device_alloc(size_t bytes) override {
    void* p = nullptr;
    check(ops_->device_alloc(ctx_, bytes, &p),
          "device_alloc of " + std::to_string(bytes) + " bytes");
    return p;
  }
  void device_free(void* ptr) override { check(ops_->device_free(ctx_, ptr), "device_free"); }
  std::string ipc_export(const void* ptr) override {
    char h[CARAVAN_REDUCER_MAX_IPC_HANDLE_V1];
    size_t len = sizeof h;
    check(ops_->ipc_export(ctx_, ptr, h, &len), "ipc_export");
    return std::string(h, len);
  }
  void* ipc_open(const std::string& handle) override {
    void* p = nullptr;
    check(ops_->ipc_open(ctx_, handle.data(), handle.size(), &p), "ipc_open");
    return p;
  }
  void ipc_close(void* ptr) override { check(ops_->ipc_close(ctx_, ptr), "ipc_close"); }
  Event ipc_event_create(std::string* handle) override {
    char h[CARAVAN_REDUCER_MAX_IPC_HANDLE_V1];
    size_t len = sizeof h;
    void* e = nullptr;
    check(ops_->ipc_event_create(ctx_, &e, h, &len), "ipc_event_create");
    handle->assign(h, len);
    return e;
  }
  Event ipc_event_open(const std::string& handle) override {
    void* e = nullptr;
    check(ops_->ipc_event_open(ctx_, handle.data(), handle.size(), &e), "ipc_event_open");
    return e;
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw Error(CARAVAN_ERR_PLUGIN,
                "device reducer '" + name_ + "' (" + lib_->path + ", " + source_ + ") " + why);
  }

  void check_table() const {
    if (ops_->struct_size < kUsedTableSize)
      refuse("has an ops table of " + std::to_string(ops_->struct_size) +
             " bytes, too short for the device memory services of reducer ABI 1.1 (" +
             std::to_string(kUsedTableSize) + " bytes): it cannot stage device tensors");
    const void* entries[] = {reinterpret_cast<const void*>(ops_->init),
                             reinterpret_cast<const void*>(ops_->finalize),
                             reinterpret_cast<const void*>(ops_->properties),
                             reinterpret_cast<const void*>(ops_->sum_many),
                             reinterpret_cast<const void*>(ops_->memory_device),
                             reinterpret_cast<const void*>(ops_->host_alloc),
                             reinterpret_cast<const void*>(ops_->host_free),
                             reinterpret_cast<const void*>(ops_->stream_create),
                             reinterpret_cast<const void*>(ops_->stream_destroy),
                             reinterpret_cast<const void*>(ops_->copy),
                             reinterpret_cast<const void*>(ops_->event_create),
                             reinterpret_cast<const void*>(ops_->event_destroy),
                             reinterpret_cast<const void*>(ops_->event_record),
                             reinterpret_cast<const void*>(ops_->stream_wait),
                             reinterpret_cast<const void*>(ops_->event_done)};
    for (const void* e : entries)
      if (!e) refuse("has NULL device memory service entries: it cannot stage device tensors");
  }

  void check(caravan_status s, const std::string& what) const {
    if (s != CARAVAN_STATUS_OK)
      throw Error(CARAVAN_ERR_INTERNAL, "device reducer '" + description_ + "': " + what +
                                            " failed: " + describe_plugin_failure(s));
  }

  std::unique_ptr<PluginLibrary> lib_;
  const caravan_reducer_ops_v1* ops_;
  std::string name_;
  std::string source_;
  HostServices host_;
  void* ctx_ = nullptr;
  std::string description_;
  bool has_ipc_ = false;
};

}  // namespace

bool DeviceMemory::wait(Event e, std::chrono::steady_clock::time_point deadline) {
  while (!event_done(e)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
  return true;
}

bool DeviceMemory::drain(Stream s, std::chrono::steady_clock::time_point deadline) {
  Event last = event_create();
  bool passed = false;
  try {
    event_record(last, s);
    passed = wait(last, deadline);
  } catch (...) {
    event_destroy(last);
    throw;
  }
  event_destroy(last);
  return passed;
}

std::unique_ptr<DeviceMemory> open_device_memory(const std::string& choice,
                                                 const std::string& plugin_path) {
  std::string source = "CARAVAN_DEVICE_REDUCER=" + choice;
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, choice, source,
                         plugin_path);
  return std::make_unique<PluginDeviceMemory>(std::move(lib), source);
}

}  // namespace caravan
