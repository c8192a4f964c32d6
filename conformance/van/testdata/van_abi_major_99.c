/* A van that claims an ABI major no Caravan speaks: the kit must refuse it
 * with a message naming the major, never run tests against it. */
#include "caravan/plugin/plugin.h"

static const caravan_plugin_descriptor kDescriptor = {CARAVAN_PLUGIN_MAGIC,
                                                      99,
                                                      0,
                                                      CARAVAN_PLUGIN_KIND_VAN,
                                                      sizeof(caravan_plugin_descriptor),
                                                      "abi99",
                                                      "0",
                                                      "refused by every loader",
                                                      NULL,
                                                      0,
                                                      &kDescriptor};

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  return &kDescriptor;
}
