/* A van that speaks an older minor of its major: a real van (INNER_VAN) with
 * its table cut to that minor's size, and past that size entries that
 * abort. A job that runs over it shows that the engine loads the older
 * table and neither reads nor calls beyond struct_size. Built once per cut:
 *   CUT_MAJOR 1: ABI 1.0, the ABI 1 test van (van_v1_skeleton/) without
 *     send_slot;
 *   CUT_MAJOR 2: ABI 2.0, the tcp van without lend and unlend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inner_plugin.h"

static void beyond(const char* entry) {
  fprintf(stderr, "van %s: %s called beyond its table\n", CUT_NAME, entry);
  abort();
}

#if CUT_MAJOR == 1
#include "caravan/plugin/van_v1.h"
typedef caravan_van_ops_v1 Ops;
#define CUT_SIZE CARAVAN_VAN_OPS_V1_0_SIZE
#define CUT_ABI_MAJOR CARAVAN_VAN_ABI_MAJOR_V1
static caravan_status send_slot_beyond(void* ctx, uint64_t peer, uint64_t slot,
                                       const caravan_segment_v1* segs, size_t n,
                                       caravan_send_done_fn done, void* cookie) {
  (void)ctx, (void)peer, (void)slot, (void)segs, (void)n, (void)done, (void)cookie;
  beyond("send_slot");
  return CARAVAN_STATUS_INTERNAL;
}
static void poison(Ops* o) { o->send_slot = send_slot_beyond; }
#else
#include "caravan/plugin/van_v2.h"
typedef caravan_van_ops_v2 Ops;
#define CUT_SIZE CARAVAN_VAN_OPS_V2_0_SIZE
#define CUT_ABI_MAJOR CARAVAN_VAN_ABI_MAJOR_V2
static caravan_status lend_beyond(void* ctx, uint64_t slot, size_t segment, void* buf, size_t len) {
  (void)ctx, (void)slot, (void)segment, (void)buf, (void)len;
  beyond("lend");
  return CARAVAN_STATUS_INTERNAL;
}
static caravan_status unlend_beyond(void* ctx, uint64_t slot) {
  (void)ctx, (void)slot;
  beyond("unlend");
  return CARAVAN_STATUS_INTERNAL;
}
static void poison(Ops* o) {
  o->lend = lend_beyond;
  o->unlend = unlend_beyond;
}
#endif

static Ops ops;
static caravan_plugin_descriptor descriptor;

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  if (descriptor.ops) return &descriptor;
  const caravan_plugin_descriptor* inner = inner_descriptor(INNER_VAN, "van " CUT_NAME);
  if (!inner || inner->abi_major != CUT_ABI_MAJOR) return NULL;
  memcpy(&ops, inner->ops, CUT_SIZE);
  ops.struct_size = CUT_SIZE;
  poison(&ops);
  return wrap_descriptor(&descriptor, inner, CUT_NAME,
                         "a van behind a table of an older minor (" CUT_NAME ")", &ops);
}
