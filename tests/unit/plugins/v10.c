/* A van that speaks ABI 1.0: the SDK's example van (an ABI 1 van) with its
 * table cut to 1.0's size, and past that size a send_slot that aborts. A
 * job that runs over it shows that the engine's lift loads an ABI 1.0 van
 * and neither reads nor calls beyond struct_size. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caravan/plugin/van_v1.h"

static caravan_van_ops_v1 ops;
static caravan_plugin_descriptor descriptor;

static caravan_status beyond_the_table(void* ctx, uint64_t peer, uint64_t slot, const caravan_segment_v1* segs,
                                       size_t n, caravan_send_done_fn done, void* cookie) {
  (void)ctx, (void)peer, (void)slot, (void)segs, (void)n, (void)done, (void)cookie;
  fprintf(stderr, "van v10: send_slot called beyond a 1.0 table\n");
  abort();
}

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  if (descriptor.ops) return &descriptor;
  void* v1 = dlopen(CARAVAN_VAN_V1_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!v1) {
    fprintf(stderr, "van v10: %s\n", dlerror());
    return NULL;
  }
  caravan_plugin_entry_fn entry = (caravan_plugin_entry_fn)dlsym(v1, CARAVAN_PLUGIN_ENTRY_SYMBOL);
  const caravan_plugin_descriptor* inner = entry ? entry() : NULL;
  if (!inner || inner->abi_major != CARAVAN_VAN_ABI_MAJOR_V1) return NULL;
  memcpy(&ops, inner->ops, CARAVAN_VAN_OPS_V1_0_SIZE);
  ops.struct_size = CARAVAN_VAN_OPS_V1_0_SIZE;
  ops.send_slot = beyond_the_table;
  descriptor = *inner;
  descriptor.abi_minor = 0;
  descriptor.name = "v10";
  descriptor.description = "the SDK's example van behind an ABI 1.0 table";
  descriptor.ops = &ops;
  return &descriptor;
}
