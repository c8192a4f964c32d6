// Builds a reducer ABI v1 operations table from a C++ class (header-only,
// part of the SDK), so the C boundary is written once for every reducer: a
// NULL instance, the argument checks reducer_v1.h asks of every reducer,
// the properties copied into the caller's (possibly smaller) struct, and
// exceptions turned into status codes and set_error text.
//
// The class R provides (CARAVAN_REDUCER_V1_CLASS, below, declares the first
// eight):
//   static constexpr const char* kName;        // "cpu reducer": starts the checks' error text
//   explicit R(const caravan_host_v1* host);    // may throw plugin::Error
//   const caravan::plugin::Host& host() const;
//   caravan_reducer_properties_v1 properties() const;   // struct_size is ignored
//   void sum(void* dst, const void* src, size_t count, caravan_dtype dtype, void* stream);
//   void sum2(void* dst, const void* a, const void* b, size_t count, caravan_dtype dtype,
//             void* stream);
//   void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
//                 caravan_dtype dtype, void* stream);
//   void scale(void* data, size_t count, caravan_dtype dtype, double factor, void* stream);
// and, optionally, the local group: all five or none (the entries are NULL
// without them, and properties() must not claim CAP_LOCAL_GROUP):
//   void local_id(void* id_out, size_t* id_len);
//   void* local_join(const void* id, size_t id_len, int local_rank, int local_size);
//   void local_leave(void* group);
//   void local_reduce(void* group, void* dst, const void* src, size_t count,
//                     caravan_dtype dtype, int root, void* stream);
//   void local_broadcast(void* group, void* data, size_t count, caravan_dtype dtype, int root,
//                        void* stream);
// and, optionally (since ABI 1.1), the device memory services: all of them
// or none (properties() then claims CAP_DEVICE_SERVICES):
//   int memory_device(const void* ptr);          // -1: host memory
//   void* host_alloc(size_t bytes);  void host_free(void* ptr);
//   void* stream_create();  void stream_destroy(void* stream);
//   void copy(void* dst, const void* src, size_t bytes, void* stream);
//   void* event_create();  void event_destroy(void* event);
//   void event_record(void* event, void* stream);
//   void stream_wait(void* stream, void* event);
//   bool event_done(void* event);
// and, optionally, IPC between the processes of a machine (all or none;
// properties() then claims CAP_DEVICE_IPC):
//   void* device_alloc(size_t bytes);  void device_free(void* ptr);
//   size_t ipc_export(const void* ptr, void* handle_out, size_t capacity);  // the length
//   void* ipc_open(const void* handle, size_t len);  void ipc_close(void* ptr);
//   void* ipc_event_create(void* handle_out, size_t capacity, size_t* len);
//   void* ipc_event_open(const void* handle, size_t len);
// Its destructor is finalize. Before a member runs, the table has checked
// (INVALID_ARGUMENT, or UNSUPPORTED for a dtype): dtype is one of
// caravan_dtype's values; an array pointer is not NULL when count > 0 (dst
// of local_reduce excepted: only the root needs it); sum_many has
// num_srcs >= 1 and non-NULL srcs; out, id_out, id_len, id, group_out and
// group are not NULL.
#ifndef CARAVAN_PLUGIN_REDUCER_CXX_HPP
#define CARAVAN_PLUGIN_REDUCER_CXX_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"

namespace caravan::plugin {

// Inside the class body of a reducer R: declares kName (its text), its
// constructor (init), host() and the five operations every reducer has, all
// public, for the reducer's source to define; R keeps its Host in a member
// named host_. The optional groups above are declared by hand after it.
#define CARAVAN_REDUCER_V1_CLASS(R, NAME)                                                  \
 public:                                                                                 \
  static constexpr const char* kName = NAME;                                             \
  explicit R(const caravan_host_v1* host);                                               \
  const ::caravan::plugin::Host& host() const { return host_; }                          \
  caravan_reducer_properties_v1 properties() const;                                      \
  void sum(void* dst, const void* src, size_t count, caravan_dtype dtype, void* stream); \
  void sum2(void* dst, const void* a, const void* b, size_t count, caravan_dtype dtype,  \
            void* stream);                                                               \
  void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,       \
                caravan_dtype dtype, void* stream);                                      \
  void scale(void* data, size_t count, caravan_dtype dtype, double factor, void* stream);

template <class R, class = void>
struct HasLocalGroup : std::false_type {};
template <class R>
struct HasLocalGroup<R, std::void_t<decltype(std::declval<R&>().local_join(
                            static_cast<const void*>(nullptr), size_t{}, int{}, int{}))>>
    : std::true_type {};

template <class R, class = void>
struct HasDeviceServices : std::false_type {};
template <class R>
struct HasDeviceServices<R, std::void_t<decltype(std::declval<R&>().event_done(
                                static_cast<void*>(nullptr)))>> : std::true_type {};

template <class R, class = void>
struct HasDeviceIpc : std::false_type {};
template <class R>
struct HasDeviceIpc<R, std::void_t<decltype(std::declval<R&>().ipc_event_open(
                           static_cast<const void*>(nullptr), size_t{}))>> : std::true_type {};

template <class R>
struct ReducerOpsV1 {
  template <class Body>
  static caravan_status with(void* ctx, Body&& body) noexcept {
    return Instance<R>::with(ctx, [&](R& reducer) { return body(reducer), CARAVAN_STATUS_OK; });
  }

  static void need(const void* p, size_t count, const char* what) {
    if (!p && count > 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, std::string(R::kName) + ": NULL " + what);
  }

  // C callers may pass any int; in C++ reading a caravan_dtype that holds
  // no enumerator is undefined, so its bytes are copied, never the enum read.
  static caravan_dtype checked(const caravan_dtype* dtype) {
    static_assert(sizeof(caravan_dtype) == sizeof(int32_t),
                  "caravan_dtype is passed as a 32-bit int");
    int32_t raw;
    std::memcpy(&raw, dtype, sizeof raw);
    if (raw < 0 || raw >= CARAVAN_DTYPE_COUNT)
      throw Error(CARAVAN_STATUS_UNSUPPORTED,
                  std::string(R::kName) + ": unsupported dtype " + std::to_string(raw));
    return static_cast<caravan_dtype>(raw);
  }

  static caravan_status init(const caravan_host_v1* host, void** out_ctx) {
    if (!host || !out_ctx || host->struct_size < sizeof(caravan_host_v1))
      return guarded(Host(host), [&]() -> caravan_status {
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                    std::string(R::kName) + ": init needs a v1 host table and out_ctx");
      });
    return Instance<R>::create(host, out_ctx);
  }
  static caravan_status finalize(void* ctx) { return Instance<R>::destroy(ctx); }
  static caravan_status properties(void* ctx, caravan_reducer_properties_v1* out) {
    return with(ctx, [&](R& r) {
      need(out, 1, "properties output");
      caravan_reducer_properties_v1 p = r.properties();
      // Only what the caller's (possibly older, smaller) struct has room for.
      auto fits = [&](size_t offset, size_t size) { return out->struct_size >= offset + size; };
      if (fits(offsetof(caravan_reducer_properties_v1, caps), sizeof p.caps)) out->caps = p.caps;
      if (fits(offsetof(caravan_reducer_properties_v1, dtypes), sizeof p.dtypes))
        out->dtypes = p.dtypes;
      if (fits(offsetof(caravan_reducer_properties_v1, kernel), sizeof p.kernel))
        out->kernel = p.kernel;
    });
  }
  static caravan_status sum(void* ctx, void* dst, const void* src, size_t count,
                            caravan_dtype dtype, void* stream) {
    return with(ctx, [&](R& r) {
      caravan_dtype dt = checked(&dtype);
      need(dst, count, "dst");
      need(src, count, "src");
      r.sum(dst, src, count, dt, stream);
    });
  }
  static caravan_status sum2(void* ctx, void* dst, const void* a, const void* b, size_t count,
                             caravan_dtype dtype, void* stream) {
    return with(ctx, [&](R& r) {
      caravan_dtype dt = checked(&dtype);
      need(dst, count, "dst");
      need(a, count, "a");
      need(b, count, "b");
      r.sum2(dst, a, b, count, dt, stream);
    });
  }
  static caravan_status sum_many(void* ctx, void* dst, const void* const* srcs, size_t num_srcs,
                                 size_t count, caravan_dtype dtype, void* stream) {
    return with(ctx, [&](R& r) {
      caravan_dtype dt = checked(&dtype);
      if (num_srcs == 0)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                    std::string(R::kName) + ": sum_many needs num_srcs >= 1");
      need(srcs, num_srcs, "srcs");
      need(dst, count, "dst");
      for (size_t s = 0; s < num_srcs; ++s)
        need(srcs[s], count, ("srcs[" + std::to_string(s) + "]").c_str());
      r.sum_many(dst, srcs, num_srcs, count, dt, stream);
    });
  }
  static caravan_status scale(void* ctx, void* data, size_t count, caravan_dtype dtype,
                              double factor, void* stream) {
    return with(ctx, [&](R& r) {
      caravan_dtype dt = checked(&dtype);
      need(data, count, "data");
      r.scale(data, count, dt, factor, stream);
    });
  }

  static caravan_status local_id(void* ctx, void* id_out, size_t* id_len) {
    return with(ctx, [&](R& r) {
      need(id_out, 1, "id_out");
      need(id_len, 1, "id_len");
      r.local_id(id_out, id_len);
    });
  }
  static caravan_status local_join(void* ctx, const void* id, size_t id_len, int local_rank,
                                   int local_size, void** group_out) {
    return with(ctx, [&](R& r) {
      need(id, 1, "id");
      need(group_out, 1, "group_out");
      *group_out = nullptr;  // stays so when joining fails
      *group_out = r.local_join(id, id_len, local_rank, local_size);
    });
  }
  static caravan_status local_leave(void* ctx, void* group) {
    return with(ctx, [&](R& r) {
      need(group, 1, "local group");
      r.local_leave(group);
    });
  }
  static caravan_status local_reduce(void* ctx, void* group, void* dst, const void* src,
                                     size_t count, caravan_dtype dtype, int root, void* stream) {
    return with(ctx, [&](R& r) {
      need(group, 1, "local group");
      caravan_dtype dt = checked(&dtype);
      need(src, count, "src");
      r.local_reduce(group, dst, src, count, dt, root, stream);
    });
  }
  static caravan_status local_broadcast(void* ctx, void* group, void* data, size_t count,
                                        caravan_dtype dtype, int root, void* stream) {
    return with(ctx, [&](R& r) {
      need(group, 1, "local group");
      caravan_dtype dt = checked(&dtype);
      need(data, count, "data");
      r.local_broadcast(group, data, count, dt, root, stream);
    });
  }

  static caravan_status memory_device(void* ctx, const void* ptr, int* device_out) {
    return with(ctx, [&](R& r) {
      need(device_out, 1, "device_out");
      *device_out = r.memory_device(ptr);
    });
  }
  static caravan_status host_alloc(void* ctx, size_t bytes, void** out) {
    return with(ctx, [&](R& r) {
      need(out, 1, "out");
      if (bytes == 0)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, std::string(R::kName) + ": host_alloc of 0 bytes");
      *out = nullptr;
      *out = r.host_alloc(bytes);
    });
  }
  static caravan_status host_free(void* ctx, void* ptr) {
    return with(ctx, [&](R& r) {
      if (ptr) r.host_free(ptr);
    });
  }
  static caravan_status stream_create(void* ctx, void** out) {
    return with(ctx, [&](R& r) {
      need(out, 1, "stream_out");
      *out = r.stream_create();
    });
  }
  static caravan_status stream_destroy(void* ctx, void* stream) {
    return with(ctx, [&](R& r) {
      need(stream, 1, "stream");
      r.stream_destroy(stream);
    });
  }
  static caravan_status copy(void* ctx, void* dst, const void* src, size_t bytes, void* stream) {
    return with(ctx, [&](R& r) {
      need(dst, bytes, "dst");
      need(src, bytes, "src");
      if (bytes > 0) r.copy(dst, src, bytes, stream);
    });
  }
  static caravan_status event_create(void* ctx, void** out) {
    return with(ctx, [&](R& r) {
      need(out, 1, "event_out");
      *out = r.event_create();
    });
  }
  static caravan_status event_destroy(void* ctx, void* event) {
    return with(ctx, [&](R& r) {
      need(event, 1, "event");
      r.event_destroy(event);
    });
  }
  static caravan_status event_record(void* ctx, void* event, void* stream) {
    return with(ctx, [&](R& r) {
      need(event, 1, "event");
      r.event_record(event, stream);
    });
  }
  static caravan_status stream_wait(void* ctx, void* stream, void* event) {
    return with(ctx, [&](R& r) {
      need(event, 1, "event");
      r.stream_wait(stream, event);
    });
  }
  static caravan_status event_done(void* ctx, void* event, int* done_out) {
    return with(ctx, [&](R& r) {
      need(event, 1, "event");
      need(done_out, 1, "done_out");
      *done_out = r.event_done(event) ? 1 : 0;
    });
  }

  static caravan_status device_alloc(void* ctx, size_t bytes, void** out) {
    return with(ctx, [&](R& r) {
      need(out, 1, "out");
      if (bytes == 0)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                    std::string(R::kName) + ": device_alloc of 0 bytes");
      *out = nullptr;
      *out = r.device_alloc(bytes);
    });
  }
  static caravan_status device_free(void* ctx, void* ptr) {
    return with(ctx, [&](R& r) {
      if (ptr) r.device_free(ptr);
    });
  }
  static void need_capacity(const size_t* len) {
    need(len, 1, "handle_len");
    if (*len < CARAVAN_REDUCER_MAX_IPC_HANDLE_V1)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  std::string(R::kName) + ": an IPC handle needs " +
                      std::to_string(CARAVAN_REDUCER_MAX_IPC_HANDLE_V1) + " bytes, given " +
                      std::to_string(*len));
  }
  static caravan_status ipc_export(void* ctx, const void* ptr, void* handle_out,
                                   size_t* handle_len) {
    return with(ctx, [&](R& r) {
      need(ptr, 1, "ptr");
      need(handle_out, 1, "handle_out");
      need_capacity(handle_len);
      *handle_len = r.ipc_export(ptr, handle_out, *handle_len);
    });
  }
  static caravan_status ipc_open(void* ctx, const void* handle, size_t handle_len,
                                 void** ptr_out) {
    return with(ctx, [&](R& r) {
      need(handle, 1, "handle");
      need(ptr_out, 1, "ptr_out");
      *ptr_out = nullptr;
      *ptr_out = r.ipc_open(handle, handle_len);
    });
  }
  static caravan_status ipc_close(void* ctx, void* ptr) {
    return with(ctx, [&](R& r) {
      need(ptr, 1, "ptr");
      r.ipc_close(ptr);
    });
  }
  static caravan_status ipc_event_create(void* ctx, void** event_out, void* handle_out,
                                         size_t* handle_len) {
    return with(ctx, [&](R& r) {
      need(event_out, 1, "event_out");
      need(handle_out, 1, "handle_out");
      need_capacity(handle_len);
      size_t len = 0;
      *event_out = r.ipc_event_create(handle_out, *handle_len, &len);
      *handle_len = len;
    });
  }
  static caravan_status ipc_event_open(void* ctx, const void* handle, size_t handle_len,
                                       void** event_out) {
    return with(ctx, [&](R& r) {
      need(handle, 1, "handle");
      need(event_out, 1, "event_out");
      *event_out = r.ipc_event_open(handle, handle_len);
    });
  }

  // The local group's and the device services' entries are named only
  // when R has them: their bodies would not compile otherwise.
  static constexpr caravan_reducer_ops_v1 make_table() {
    // Value-initialised: the optional entries stay NULL unless R has them.
    caravan_reducer_ops_v1 t = caravan_reducer_ops_v1();
    t.struct_size = sizeof(caravan_reducer_ops_v1);
    t.init = init;
    t.finalize = finalize;
    t.properties = properties;
    t.sum = sum;
    t.sum2 = sum2;
    t.sum_many = sum_many;
    t.scale = scale;
    if constexpr (HasLocalGroup<R>::value) {
      t.local_id = local_id;
      t.local_join = local_join;
      t.local_leave = local_leave;
      t.local_reduce = local_reduce;
      t.local_broadcast = local_broadcast;
    }
    if constexpr (HasDeviceServices<R>::value) {
      t.memory_device = memory_device;
      t.host_alloc = host_alloc;
      t.host_free = host_free;
      t.stream_create = stream_create;
      t.stream_destroy = stream_destroy;
      t.copy = copy;
      t.event_create = event_create;
      t.event_destroy = event_destroy;
      t.event_record = event_record;
      t.stream_wait = stream_wait;
      t.event_done = event_done;
    }
    if constexpr (HasDeviceIpc<R>::value) {
      t.device_alloc = device_alloc;
      t.device_free = device_free;
      t.ipc_export = ipc_export;
      t.ipc_open = ipc_open;
      t.ipc_close = ipc_close;
      t.ipc_event_create = ipc_event_create;
      t.ipc_event_open = ipc_event_open;
    }
    return t;
  }
  static constexpr caravan_reducer_ops_v1 table = make_table();
};

// The ops table for R, to put in the plugin's descriptor.
template <class R>
const caravan_reducer_ops_v1* reducer_ops_v1() {
  return &ReducerOpsV1<R>::table;
}

// The whole descriptor of a reducer R of ABI 1 with its parameter list:
//   CARAVAN_PLUGIN_ENTRY(reducer_descriptor_v1<MyReducer>("name", "1.0", "one line", kParams))
template <class R, size_t N>
caravan_plugin_descriptor reducer_descriptor_v1(const char* name, const char* version,
                                                const char* description,
                                                const caravan_param_info (&params)[N]) {
  return plugin_descriptor(CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1,
                           CARAVAN_REDUCER_ABI_MINOR_V1, name, version, description, params, N,
                           reducer_ops_v1<R>());
}

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGIN_REDUCER_CXX_HPP
