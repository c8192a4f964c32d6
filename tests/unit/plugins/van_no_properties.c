/* An ABI 2 van whose init succeeds and whose properties() fails: the engine
 * must still finalize the instance init made. It counts both in symbols
 * the test reads (caravan_test_inits, caravan_test_finalizes). */
#include <stdlib.h>

#include "caravan/plugin/van_v2.h"

CARAVAN_PLUGIN_EXPORT int caravan_test_inits = 0;
CARAVAN_PLUGIN_EXPORT int caravan_test_finalizes = 0;

static caravan_status init(const caravan_host_v1* host, void** out_ctx) {
  (void)host;
  *out_ctx = malloc(1);
  ++caravan_test_inits;
  return CARAVAN_STATUS_OK;
}

static caravan_status finalize(void* ctx) {
  free(ctx);
  ++caravan_test_finalizes;
  return CARAVAN_STATUS_OK;
}

static caravan_status properties(void* ctx, caravan_van_properties_v2* out) {
  (void)ctx, (void)out;
  return CARAVAN_STATUS_IO;
}

/* Nothing past properties is ever reached: the rest stays NULL. */
static const caravan_van_ops_v2 ops = {
    .struct_size = sizeof(caravan_van_ops_v2),
    .init = init,
    .finalize = finalize,
    .properties = properties,
};

static const caravan_plugin_descriptor descriptor = {CARAVAN_PLUGIN_MAGIC,
                                                     CARAVAN_VAN_ABI_MAJOR_V2,
                                                     CARAVAN_VAN_ABI_MINOR_V2,
                                                     CARAVAN_PLUGIN_KIND_VAN,
                                                     sizeof(caravan_plugin_descriptor),
                                                     "noproperties",
                                                     "1",
                                                     "a van whose properties() fails",
                                                     NULL,
                                                     0,
                                                     &ops};

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &descriptor;
}
