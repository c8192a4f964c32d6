/* For test plugins that wrap a real one (van_table_cut.c, reducer_table.c):
 * loading the real plugin, and the wrapper's descriptor made from its. */
#ifndef CARAVAN_TEST_INNER_PLUGIN_H
#define CARAVAN_TEST_INNER_PLUGIN_H

#include <dlfcn.h>
#include <stdio.h>

#include "caravan/plugin/plugin.h"

/* The real plugin's descriptor, from the file at `path`; NULL, said on
 * stderr as `who`, when it cannot be loaded. */
static const caravan_plugin_descriptor* inner_descriptor(const char* path, const char* who) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "%s: %s\n", who, dlerror());
    return NULL;
  }
  caravan_plugin_entry_fn entry = (caravan_plugin_entry_fn)dlsym(lib, CARAVAN_PLUGIN_ENTRY_SYMBOL);
  return entry ? entry() : NULL;
}

/* The wrapper's descriptor: the real one's, renamed, at minor 0, over `ops`. */
static const caravan_plugin_descriptor* wrap_descriptor(caravan_plugin_descriptor* out,
                                                        const caravan_plugin_descriptor* inner,
                                                        const char* name, const char* description,
                                                        const void* ops) {
  *out = *inner;
  out->abi_minor = 0;
  out->name = name;
  out->description = description;
  out->ops = ops;
  return out;
}

#endif
