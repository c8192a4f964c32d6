// The C face of the ibverbs van: descriptor, ops table and the one
// exported symbol. Every entry runs inside plugin::guarded so no exception
// escapes.
#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v1.h"
#include "verbs_van.h"

namespace {

using caravan::plugin::Error;
using caravan::plugin::guarded;
using caravan::plugin::Host;
using caravan::van_verbs::VerbsVan;

template <class Body>
caravan_status with_van(void* ctx, Body&& body) noexcept {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  auto* van = static_cast<VerbsVan*>(ctx);
  return guarded(van->host(), [&] { return body(*van); });
}

caravan_status op_init(const caravan_host_v1* host, void** out_ctx) {
  return guarded(Host(host), [&] {
    if (!out_ctx) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "init: out_ctx is NULL");
    *out_ctx = new VerbsVan(host);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_finalize(void* ctx) {
  if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
  auto* van = static_cast<VerbsVan*>(ctx);
  Host host = van->host();  // the host table outlives the van
  return guarded(host, [&] {
    delete van;
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_properties(void* ctx, caravan_van_properties_v1* out) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.properties(out);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_listen(void* ctx, const char* host, int port, char* addr_out, size_t addr_cap) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.listen(host, port, addr_out, addr_cap);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_connect(void* ctx, uint64_t peer, const char* address) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.connect(peer, address);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_disconnect(void* ctx, uint64_t peer) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.disconnect(peer);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_send(void* ctx, uint64_t peer, const caravan_segment_v1* segments,
                       size_t num_segments, caravan_send_done_fn done, void* cookie) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.send(peer, segments, num_segments, done, cookie);
    return CARAVAN_STATUS_OK;
  });
}

caravan_status op_recv(void* ctx, int timeout_ms, caravan_van_message_v1* out) {
  return with_van(ctx, [&](VerbsVan& van) { return van.recv(timeout_ms, out); });
}

caravan_status op_release(void* ctx, caravan_van_message_v1* message) {
  return with_van(ctx, [&](VerbsVan& van) {
    van.release(message);
    return CARAVAN_STATUS_OK;
  });
}

const caravan_param_info kParams[] = {
    {"EAGER_BYTES", "65536", "largest frame sent eagerly, header included; larger messages are read remotely (same on every node)"},
    {"MAX_REGISTERED_BYTES", "536870912", "bound on registered memory (half for sending, half for receiving); RLIMIT_MEMLOCK should allow it"},
    {"RX_DEPTH", "128", "receive buffers kept posted on the shared receive queue"},
    {"SEND_DEPTH", "256", "work requests in flight per connection (sends and remote reads)"},
    {"RESOLVE_TIMEOUT_MS", "5000", "rdma_cm address and route resolution timeout"},
};

const caravan_van_ops_v1 kOps = {
    sizeof(caravan_van_ops_v1),
    op_init,
    op_finalize,
    op_properties,
    op_listen,
    op_connect,
    op_disconnect,
    op_send,
    op_recv,
    op_release,
};

const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC,
    CARAVAN_VAN_ABI_MAJOR_V1,
    CARAVAN_VAN_ABI_MINOR_V1,
    CARAVAN_PLUGIN_KIND_VAN,
    sizeof(caravan_plugin_descriptor),
    "verbs",
    "0.1.0",
    "ibverbs RDMA van: RC queue pairs over rdma_cm, eager sends + rendezvous RDMA reads",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    &kOps,
};

}  // namespace

extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
