/* A well-formed van descriptor that speaks a future ABI major. */
#include "broken_descriptor.h"

BROKEN_PLUGIN_ENTRY(CARAVAN_PLUGIN_MAGIC, 99, 3, CARAVAN_PLUGIN_KIND_VAN, "abi99", "9.9",
                    "a van from the future")
