/* An entry that returns a descriptor with the wrong magic. */
#include "caravan/plugin/plugin.h"

static const int kOps = 0;
static const caravan_plugin_descriptor kDescriptor = {
    0xDEADBEEFu, 1, 0, CARAVAN_PLUGIN_KIND_VAN, sizeof(caravan_plugin_descriptor),
    "badmagic", "1.0", "not really a plugin", NULL, 0, &kOps};

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
