// Builds a van ABI v1 operations table from a C++ class (header-only, part
// of the SDK), so the C boundary — NULL checks, exceptions turned into
// status codes and set_error text — is written once for every van.
//
// The class V provides:
//   explicit V(const caravan_host_v1* host);            // may throw plugin::Error
//   const caravan::plugin::Host& host() const;
//   void properties(caravan_van_properties_v1* out);
//   void listen(const char* host, int port, char* addr_out, size_t addr_cap);
//   void connect(uint64_t peer, const char* address);
//   void disconnect(uint64_t peer);
//   void-or-caravan_status send(uint64_t peer, const caravan_segment_v1* segments,
//                               size_t num_segments, caravan_send_done_fn done, void* cookie);
//   caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
//   void release(caravan_van_message_v1* message);
// and, optionally (ABI 1.1; the entry is NULL without it):
//   void-or-caravan_status send_slot(uint64_t peer, uint64_t slot, const caravan_segment_v1* segments,
//                                    size_t num_segments, caravan_send_done_fn done, void* cookie);
// Its destructor is finalize.
#ifndef CARAVAN_PLUGIN_VAN_CXX_HPP
#define CARAVAN_PLUGIN_VAN_CXX_HPP

#include <cstdint>
#include <type_traits>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_common_cxx.hpp"
#include "caravan/plugin/van_v1.h"

namespace caravan::plugin {

template <class V, class = void>
struct HasSendSlot : std::false_type {};
template <class V>
struct HasSendSlot<V, std::void_t<decltype(std::declval<V&>().send_slot(
                          uint64_t{}, uint64_t{}, static_cast<const caravan_segment_v1*>(nullptr), size_t{},
                          caravan_send_done_fn{}, static_cast<void*>(nullptr)))>> : std::true_type {};

template <class V>
struct VanOpsV1 : VanOpsCommon<V> {
  using C = VanOpsCommon<V>;
  using C::with;

  // send and send_slot may return void (OK) or a caravan_status.
  template <class Call>
  static caravan_status status_of(Call&& call) {
    if constexpr (std::is_void_v<decltype(call())>) {
      call();
      return CARAVAN_STATUS_OK;
    } else {
      return call();
    }
  }

  static caravan_status properties(void* ctx, caravan_van_properties_v1* out) {
    return with(ctx, [&](V& v) { return v.properties(out), CARAVAN_STATUS_OK; });
  }
  static caravan_status send(void* ctx, uint64_t peer, const caravan_segment_v1* segments,
                             size_t num_segments, caravan_send_done_fn done, void* cookie) {
    return with(ctx, [&](V& v) {
      return status_of([&] { return v.send(peer, segments, num_segments, done, cookie); });
    });
  }
  static caravan_status send_slot(void* ctx, uint64_t peer, uint64_t slot, const caravan_segment_v1* segments,
                                  size_t num_segments, caravan_send_done_fn done, void* cookie) {
    return with(ctx, [&](V& v) {
      return status_of([&] { return v.send_slot(peer, slot, segments, num_segments, done, cookie); });
    });
  }
  using SendSlotFn = decltype(caravan_van_ops_v1::send_slot);
  static constexpr SendSlotFn send_slot_entry() {
    if constexpr (HasSendSlot<V>::value) return &send_slot;
    else return nullptr;
  }
  static caravan_status recv(void* ctx, int timeout_ms, caravan_van_message_v1* out) {
    return with(ctx, [&](V& v) { return v.recv(timeout_ms, out); });
  }
  static caravan_status release(void* ctx, caravan_van_message_v1* message) {
    return with(ctx, [&](V& v) { return v.release(message), CARAVAN_STATUS_OK; });
  }

  static constexpr caravan_van_ops_v1 table = {
      sizeof(caravan_van_ops_v1), C::init, C::finalize, properties, C::listen, C::connect,
      C::disconnect, send, recv, release, send_slot_entry()};
};

// The ops table for V, to put in the plugin's descriptor.
template <class V>
const caravan_van_ops_v1* van_ops_v1() {
  return &VanOpsV1<V>::table;
}

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGIN_VAN_CXX_HPP
