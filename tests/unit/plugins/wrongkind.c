/* A reducer descriptor in a file named like a van. */
#include "caravan/plugin/plugin.h"

static const int kOps = 0;
static const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC, 1, 0, CARAVAN_PLUGIN_KIND_REDUCER, sizeof(caravan_plugin_descriptor),
    "wrongkind", "1.0", "a reducer, not a van", NULL, 0, &kOps};

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
