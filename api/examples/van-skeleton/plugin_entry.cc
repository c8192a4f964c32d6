// The C face of the skeleton van: the descriptor, the ops table and the one
// exported symbol. guarded() keeps every exception inside the plugin.
#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v1.h"
#include "skeleton_van.h"

namespace {

using caravan::plugin::Error;
using caravan::plugin::guarded;
using caravan::plugin::Host;
using skeleton::SkeletonVan;

template <class Body>
caravan_status with_van(void* ctx, Body&& body) noexcept {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  auto* van = static_cast<SkeletonVan*>(ctx);
  return guarded(van->host(), [&] { return body(*van); });
}

const caravan_param_info kParams[] = {
    {"MAX_MESSAGE_BYTES", "4294967296", "largest message accepted, in bytes"},
};

const caravan_van_ops_v1 kOps = {
    sizeof(caravan_van_ops_v1),
    [](const caravan_host_v1* host, void** out_ctx) -> caravan_status {
      return guarded(Host(host), [&] {
        if (!out_ctx) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "init: out_ctx is NULL");
        *out_ctx = new SkeletonVan(host);
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx) -> caravan_status {
      if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
      auto* van = static_cast<SkeletonVan*>(ctx);
      Host host = van->host();  // outlives the van
      return guarded(host, [&] {
        delete van;
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx, caravan_van_properties_v1* out) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) {
        v.properties(out);
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx, const char* host, int port, char* addr_out, size_t addr_cap) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) {
        v.listen(host, port, addr_out, addr_cap);
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx, uint64_t peer, const char* address) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) {
        v.connect(peer, address);
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx, uint64_t peer) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) {
        v.disconnect(peer);
        return CARAVAN_STATUS_OK;
      });
    },
    [](void* ctx, uint64_t peer, const caravan_segment_v1* segments, size_t num_segments,
       caravan_send_done_fn done, void* cookie) -> caravan_status {
      return with_van(
          ctx, [&](SkeletonVan& v) { return v.send(peer, segments, num_segments, done, cookie); });
    },
    [](void* ctx, int timeout_ms, caravan_van_message_v1* out) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) { return v.recv(timeout_ms, out); });
    },
    [](void* ctx, caravan_van_message_v1* message) -> caravan_status {
      return with_van(ctx, [&](SkeletonVan& v) {
        v.release(message);
        return CARAVAN_STATUS_OK;
      });
    },
};

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_VAN_ABI_MAJOR_V1,
    CARAVAN_VAN_ABI_MINOR_V1,
    CARAVAN_PLUGIN_KIND_VAN,
    sizeof(caravan_plugin_descriptor),
    "skeleton",
    "0.1.0",
    "example third-party van over plain TCP sockets",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    &kOps,
};

}  // namespace

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
