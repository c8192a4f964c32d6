/* reducer-cpu behind an ops table of another size, or with other
 * properties, for reducer_loader_test. Built once per variant:
 *   TABLE_NAME         the descriptor's name (and the file's, libcaravan-reducer-<name>.so);
 *   TABLE_ENDS_BEFORE  the entry the table stops at (default: a whole 1.0 table);
 *                      the bytes past struct_size hold a pattern, so an entry
 *                      called from there crashes;
 *   NO_SUM_MANY        sum_many is NULL;
 *   DEVICE_ONLY        properties say device memory and async stream, not host memory. */
#include <string.h>

#include "caravan/plugin/reducer_v1.h"
#include "inner_plugin.h"

#ifdef TABLE_ENDS_BEFORE
#define TABLE_SIZE offsetof(caravan_reducer_ops_v1, TABLE_ENDS_BEFORE)
#else
#define TABLE_SIZE CARAVAN_REDUCER_OPS_V1_0_SIZE
#endif

static const caravan_reducer_ops_v1* inner;
static caravan_reducer_ops_v1 ops;
static caravan_plugin_descriptor descriptor;

static caravan_status properties(void* ctx, caravan_reducer_properties_v1* out) {
  caravan_status s = inner->properties(ctx, out);
#ifdef DEVICE_ONLY
  if (s == CARAVAN_STATUS_OK)
    out->caps = CARAVAN_REDUCER_CAP_DEVICE_MEMORY | CARAVAN_REDUCER_CAP_ASYNC_STREAM;
#endif
  return s;
}

CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) {
  if (descriptor.ops) return &descriptor;
  const caravan_plugin_descriptor* d =
      inner_descriptor(CARAVAN_REDUCER_CPU_PLUGIN, "reducer " TABLE_NAME);
  if (!d) return NULL;
  inner = (const caravan_reducer_ops_v1*)d->ops;
  memset(&ops, 0xa5, sizeof ops);
  memcpy(&ops, inner, TABLE_SIZE);
  ops.struct_size = TABLE_SIZE;
  ops.properties = properties;
#ifdef NO_SUM_MANY
  ops.sum_many = NULL;
#endif
  return wrap_descriptor(&descriptor, d, TABLE_NAME, "reducer-cpu behind a test table", &ops);
}
