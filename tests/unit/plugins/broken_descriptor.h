/* The entry of a test plugin that is wrong in one way: its descriptor's
 * magic, ABI version, kind and names given field by field, with an ops
 * table of nothing the loader should ever call. */
#ifndef CARAVAN_TESTS_BROKEN_DESCRIPTOR_H
#define CARAVAN_TESTS_BROKEN_DESCRIPTOR_H

#include "caravan/plugin/plugin.h"

#define BROKEN_PLUGIN_ENTRY(magic, major, minor, kind, name, version, description)       \
  static const int kOps = 0;                                                             \
  static const caravan_plugin_descriptor kDescriptor = {                                 \
      magic,       major, minor, kind, sizeof(caravan_plugin_descriptor), name, version, \
      description, NULL,  0,     &kOps};                                                 \
  CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {    \
    return &kDescriptor;                                                                 \
  }

#endif
