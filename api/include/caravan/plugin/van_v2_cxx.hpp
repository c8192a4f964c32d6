// Builds a van ABI 2 operations table from a C++ class (header-only, part
// of the SDK), so the C boundary — NULL checks, exceptions turned into
// status codes and set_error text — is written once for every van.
// van_cxx.hpp does the same for ABI 1.
//
// The class V provides:
//   explicit V(const caravan_host_v1* host);            // may throw plugin::Error
//   const caravan::plugin::Host& host() const;
//   void properties(caravan_van_properties_v2* out);
//   void listen(const char* host, int port, char* addr_out, size_t addr_cap);
//   void connect(uint64_t peer, const char* address);
//   void disconnect(uint64_t peer);
//   void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
//             size_t num_segments, uint64_t send_id);
//   caravan_status poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,
//                       size_t* num_events);
//   void release(const caravan_van_message_v2* message);
//   void interrupt();
// and, optionally (minor 1; both or neither):
//   void lend(uint64_t slot, size_t segment, void* buf, size_t len);
//   void unlend(uint64_t slot);
// Its destructor is finalize. CARAVAN_VAN_V2_CLASS(V) declares all of that in
// one line, so a van's header lists only what is its own.
#ifndef CARAVAN_PLUGIN_VAN_V2_CXX_HPP
#define CARAVAN_PLUGIN_VAN_V2_CXX_HPP

#include <cstdint>
#include <type_traits>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_common_cxx.hpp"
#include "caravan/plugin/van_v2.h"

namespace caravan::plugin {

// Inside the class body of a van V: declares its constructor (init),
// destructor (finalize), host() and the eight operations above, all public,
// for the van's source file to define; V is not copyable and keeps its Host
// in a member named host_. The class goes on with whatever access it states
// next, so private members follow a `private:`.
#define CARAVAN_VAN_V2_CLASS(V)                                                                   \
 public:                                                                                          \
  explicit V(const caravan_host_v1* host);                                                        \
  ~V();                                                                                           \
  V(const V&) = delete;                                                                           \
  V& operator=(const V&) = delete;                                                                \
  const ::caravan::plugin::Host& host() const { return host_; }                                   \
  void properties(caravan_van_properties_v2* out) const;                                          \
  void listen(const char* host, int port, char* addr_out, size_t addr_cap);                       \
  void connect(uint64_t peer, const char* address);                                               \
  void disconnect(uint64_t peer);                                                                 \
  void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments, size_t num_segments, \
            uint64_t send_id);                                                                    \
  caravan_status poll(int timeout_ms, caravan_van_event_v2* events, size_t capacity,              \
                      size_t* num_events);                                                        \
  void release(const caravan_van_message_v2* message);                                            \
  void interrupt();

// Whether V receives into lent memory (van_v2.h, lend): it has lend, and
// then it must have unlend too.
template <class V, class = void>
struct HasLend : std::false_type {};
template <class V>
struct HasLend<V, std::void_t<decltype(std::declval<V&>().lend(uint64_t{}, size_t{},
                                                               static_cast<void*>(nullptr), size_t{}))>>
    : std::true_type {};
template <class V, class = void>
struct HasUnlend : std::false_type {};
template <class V>
struct HasUnlend<V, std::void_t<decltype(std::declval<V&>().unlend(uint64_t{}))>> : std::true_type {};

template <class V>
struct VanOpsV2 : VanOpsCommon<V> {
  using C = VanOpsCommon<V>;
  using C::with;

  static caravan_status properties(void* ctx, caravan_van_properties_v2* out) {
    return with(ctx, [&](V& v) {
      if (!out || out->struct_size < sizeof(caravan_van_properties_v2))
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "properties: output struct missing or too small");
      return v.properties(out), CARAVAN_STATUS_OK;
    });
  }
  static caravan_status send(void* ctx, uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                             size_t num_segments, uint64_t send_id) {
    return with(ctx, [&](V& v) {
      return v.send(peer, slot, segments, num_segments, send_id), CARAVAN_STATUS_OK;
    });
  }
  static caravan_status poll(void* ctx, int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                             size_t* num_events) {
    return with(ctx, [&](V& v) {
      if (!events || capacity == 0 || !num_events)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "poll: no room for events");
      *num_events = 0;
      return v.poll(timeout_ms, events, capacity, num_events);
    });
  }
  static caravan_status release(void* ctx, const caravan_van_message_v2* message) {
    return with(ctx, [&](V& v) { return v.release(message), CARAVAN_STATUS_OK; });
  }
  static caravan_status interrupt(void* ctx) {
    return with(ctx, [&](V& v) { return v.interrupt(), CARAVAN_STATUS_OK; });
  }

  static caravan_status lend(void* ctx, uint64_t slot, size_t segment, void* buf, size_t len) {
    return with(ctx, [&](V& v) {
      if (slot == 0 || !buf || segment >= CARAVAN_VAN_MAX_SEGMENTS_V2)
        throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                    "lend: slot " + std::to_string(slot) + ", segment " + std::to_string(segment) +
                        (buf ? "" : ", no buffer") + " (a nonzero slot, a buffer and a segment below " +
                        std::to_string(CARAVAN_VAN_MAX_SEGMENTS_V2) + " are needed)");
      return v.lend(slot, segment, buf, len), CARAVAN_STATUS_OK;
    });
  }
  static caravan_status unlend(void* ctx, uint64_t slot) {
    return with(ctx, [&](V& v) { return v.unlend(slot), CARAVAN_STATUS_OK; });
  }

  static_assert(HasLend<V>::value == HasUnlend<V>::value,
                "a van with lend() must have unlend() too, and the other way round (van_v2.h)");
  static constexpr caravan_van_ops_v2 make_table() {
    caravan_van_ops_v2 t = {sizeof(caravan_van_ops_v2), C::init, C::finalize, properties, C::listen,
                            C::connect, C::disconnect, send, poll, release, interrupt, nullptr, nullptr};
    if constexpr (HasLend<V>::value) {
      t.lend = lend;
      t.unlend = unlend;
    }
    return t;
  }
  static constexpr caravan_van_ops_v2 table = make_table();
};

// The ops table for V, to put in the plugin's descriptor.
template <class V>
const caravan_van_ops_v2* van_ops_v2() {
  return &VanOpsV2<V>::table;
}

// The whole descriptor of a van V of ABI 2 with its parameter list:
//   CARAVAN_PLUGIN_ENTRY(van_descriptor_v2<MyVan>("name", "1.0", "one line", kParams))
template <class V, size_t N>
caravan_plugin_descriptor van_descriptor_v2(const char* name, const char* version,
                                            const char* description,
                                            const caravan_param_info (&params)[N]) {
  return plugin_descriptor(CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V2,
                           CARAVAN_VAN_ABI_MINOR_V2, name, version, description, params, N,
                           van_ops_v2<V>());
}

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGIN_VAN_V2_CXX_HPP
