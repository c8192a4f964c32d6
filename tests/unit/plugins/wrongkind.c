/* A reducer descriptor in a file named like a van. */
#include "broken_descriptor.h"

BROKEN_PLUGIN_ENTRY(CARAVAN_PLUGIN_MAGIC, 1, 0, CARAVAN_PLUGIN_KIND_REDUCER, "wrongkind", "1.0",
                    "a reducer, not a van")
