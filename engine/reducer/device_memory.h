// The device memory services of a device reducer plugin (reducer ABI 1.1,
// CAP_DEVICE_SERVICES): what a worker stages a device tensor through host
// memory with. The engine links no CUDA: every device call goes through the
// plugin's table.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

namespace caravan {

class DeviceMemory {
 public:
  // Opaque handles of the plugin's streams and events.
  using Stream = void*;
  using Event = void*;

  virtual ~DeviceMemory() = default;
  // "gpu (cuda-sm90)", for logs and errors.
  virtual const std::string& description() const = 0;
  // The device ordinal owning `ptr`, or -1 for host memory.
  virtual int device_of(const void* ptr) = 0;
  // Every call below throws caravan::Error on failure.
  virtual void* host_alloc(size_t bytes) = 0;
  virtual void host_free(void* ptr) = 0;
  virtual Stream stream_create() = 0;
  virtual void stream_destroy(Stream s) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes, Stream s) = 0;
  virtual Event event_create() = 0;
  virtual void event_destroy(Event e) = 0;
  virtual void event_record(Event e, Stream s) = 0;
  virtual void stream_wait(Stream s, Event e) = 0;
  virtual bool event_done(Event e) = 0;
  // Polls `e` until it has passed (true) or `deadline` (false): the engine
  // never blocks inside the plugin, so a stuck device cannot hang it.
  bool wait(Event e, std::chrono::steady_clock::time_point deadline);
  // Waits, up to `deadline`, for the work queued so far on `s`; false when
  // the deadline came first.
  bool drain(Stream s, std::chrono::steady_clock::time_point deadline);
  // dst = srcs[0] + ... on the device, enqueued on `s`.
  virtual void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                        int dtype, Stream s) = 0;

  // Between the worker processes of one machine (CUDA IPC): false when the
  // plugin has no such entries (CAP_DEVICE_IPC).
  virtual bool has_ipc() const = 0;
  virtual void* device_alloc(size_t bytes) = 0;
  virtual void device_free(void* ptr) = 0;
  // Handles are opaque bytes another process of the machine opens.
  virtual std::string ipc_export(const void* ptr) = 0;
  virtual void* ipc_open(const std::string& handle) = 0;
  virtual void ipc_close(void* ptr) = 0;
  virtual Event ipc_event_create(std::string* handle) = 0;
  virtual Event ipc_event_open(const std::string& handle) = 0;
};

// Loads `choice` (CARAVAN_DEVICE_REDUCER) and checks that it offers the
// device memory services. Throws a CARAVAN_ERR_PLUGIN error saying why not.
std::unique_ptr<DeviceMemory> open_device_memory(const std::string& choice,
                                                 const std::string& plugin_path);

}  // namespace caravan
