// The entries that van ABI 1 and ABI 2 tables share, with the same C
// signatures in both (header-only, part of the SDK): VanOpsV1
// (van_cxx.hpp) and VanOpsV2 (van_v2_cxx.hpp) build their tables from
// these and add the entries their ABI defines.
#ifndef CARAVAN_PLUGIN_VAN_COMMON_CXX_HPP
#define CARAVAN_PLUGIN_VAN_COMMON_CXX_HPP

#include <cstdint>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::plugin {

template <class V>
struct VanOpsCommon {
  template <class Body>
  static caravan_status with(void* ctx, Body&& body) noexcept {
    return Instance<V>::with(ctx, std::forward<Body>(body));
  }

  static caravan_status init(const caravan_host_v1* host, void** out_ctx) {
    return Instance<V>::create(host, out_ctx);
  }
  static caravan_status finalize(void* ctx) { return Instance<V>::destroy(ctx); }
  static caravan_status listen(void* ctx, const char* host, int port, char* addr_out,
                               size_t addr_cap) {
    return with(ctx, [&](V& v) { return v.listen(host, port, addr_out, addr_cap), CARAVAN_STATUS_OK; });
  }
  static caravan_status connect(void* ctx, uint64_t peer, const char* address) {
    return with(ctx, [&](V& v) { return v.connect(peer, address), CARAVAN_STATUS_OK; });
  }
  static caravan_status disconnect(void* ctx, uint64_t peer) {
    return with(ctx, [&](V& v) { return v.disconnect(peer), CARAVAN_STATUS_OK; });
  }
};

}  // namespace caravan::plugin

#endif  // CARAVAN_PLUGIN_VAN_COMMON_CXX_HPP
