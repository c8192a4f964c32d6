/* An entry that returns a descriptor with the wrong magic. */
#include "broken_descriptor.h"

BROKEN_PLUGIN_ENTRY(0xDEADBEEFu, 1, 0, CARAVAN_PLUGIN_KIND_VAN, "badmagic", "1.0",
                    "not really a plugin")
