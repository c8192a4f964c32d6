/* A well-formed van descriptor that speaks a future ABI major. */
#include "caravan/plugin/plugin.h"

static const int kOps = 0;
static const caravan_plugin_descriptor kDescriptor = {
    CARAVAN_PLUGIN_MAGIC, 99, 3, CARAVAN_PLUGIN_KIND_VAN, sizeof(caravan_plugin_descriptor),
    "abi99", "9.9", "a van from the future", NULL, 0, &kOps};

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
