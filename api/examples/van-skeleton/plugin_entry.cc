// The C face of the skeleton van: its descriptor and the one exported
// symbol. van_descriptor_v2 builds the ops table from SkeletonVan's methods
// (van_v2_cxx.hpp), with every entry guarded so that no exception crosses
// the C boundary; lend and unlend stay NULL, since the class has neither.
#include "caravan/plugin/van_v2_cxx.hpp"
#include "skeleton_van.h"

CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<skeleton::SkeletonVan>(
    "skeleton", "0.2.0", "example third-party van over plain TCP sockets", skeleton::kParams))
