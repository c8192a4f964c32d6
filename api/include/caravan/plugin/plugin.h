/* Caravan plugin ABI: what every plugin, of every kind, shares.
 *
 * A plugin is a shared object that exports exactly one symbol,
 * CARAVAN_PLUGIN_ENTRY_SYMBOL, a function returning a pointer to a static
 * caravan_plugin_descriptor. The descriptor's layout is frozen for every ABI
 * version: the engine reads it first, checks magic, kind and ABI major, and
 * only then interprets `ops`, whose type depends on kind and major
 * (see van_v1.h and reducer_v1.h).
 *
 * Rules that hold for every call of every table:
 *  - lengths are size_t; element counts are size_t;
 *  - calls return a caravan_status; they never throw, abort or exit;
 *  - on failure a plugin may explain itself with host->set_error() and
 *    host->log(); the engine shows that text to the user;
 *  - a table starts with its own size in bytes: entries added later in the
 *    same major version are appended, and the engine calls an optional entry
 *    only when it lies inside struct_size and is not NULL.
 *
 * Plain C99; includes only <stddef.h> and <stdint.h>.
 */
#ifndef CARAVAN_PLUGIN_PLUGIN_H
#define CARAVAN_PLUGIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "caravan/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status codes ------------------------------------------------------ */
typedef int32_t caravan_status;
enum {
  CARAVAN_STATUS_OK = 0,
  CARAVAN_STATUS_INVALID_ARGUMENT = -1, /* a bad pointer, length, dtype or address */
  CARAVAN_STATUS_UNAVAILABLE = -2,      /* hardware or library missing on this machine */
  CARAVAN_STATUS_NO_MEMORY = -3,        /* allocation or registration failed */
  CARAVAN_STATUS_IO = -4,               /* the transport failed */
  CARAVAN_STATUS_TIMEOUT = -5,          /* nothing happened within the given time */
  CARAVAN_STATUS_UNSUPPORTED = -6,      /* operation, dtype or option not offered */
  CARAVAN_STATUS_CLOSED = -7,           /* the instance or the peer is closed */
  CARAVAN_STATUS_INTERNAL = -8          /* a bug in the plugin */
};

/* ---- Versions and kinds ------------------------------------------------ */
#define CARAVAN_PLUGIN_MAGIC 0x43525650u /* "CRVP" */
#define CARAVAN_PLUGIN_ENTRY_SYMBOL "caravan_plugin_entry"

typedef enum {
  CARAVAN_PLUGIN_KIND_VAN = 1,
  CARAVAN_PLUGIN_KIND_REDUCER = 2
} caravan_plugin_kind;

/* ---- Logging levels (the same names as BYTEPS_LOG_LEVEL) -------------- */
typedef enum {
  CARAVAN_LOG_TRACE = 0,
  CARAVAN_LOG_DEBUG = 1,
  CARAVAN_LOG_INFO = 2,
  CARAVAN_LOG_WARNING = 3,
  CARAVAN_LOG_ERROR = 4,
  CARAVAN_LOG_FATAL = 5
} caravan_log_level;

/* ---- Host services, version 1 ------------------------------------------
 * Handed to a plugin's init(); valid until that instance's finalize()
 * returns. All entries are thread-safe and non-blocking. A plugin never
 * links against the engine: this table is its only way back in. */
typedef struct caravan_host_v1 {
  size_t struct_size; /* sizeof(caravan_host_v1) as the engine built it */
  void* host_ctx;     /* pass back as the first argument of every entry */

  /* Writes one log line, prefixed by the engine with the plugin's name.
   * Lines under the job's log level are discarded. */
  void (*log)(void* host_ctx, caravan_log_level level, const char* message);

  /* Looks up a plugin parameter. `name` is the short name the plugin
   * declared in its descriptor (for example "THREADS"); the engine maps it to
   * the environment variable CARAVAN_<KIND>_<PLUGIN>_<NAME> (for example
   * CARAVAN_REDUCER_CPU_THREADS). Returns NULL when unset. The string stays
   * valid until finalize(). */
  const char* (*get_param)(void* host_ctx, const char* name);

  /* Looks up a job-wide setting by its full environment name (for example
   * "DMLC_INTERFACE" or "FI_PROVIDER"). Returns NULL when unset. */
  const char* (*get_env)(void* host_ctx, const char* name);

  /* Records why the call in progress on this thread is about to fail. The
   * engine reads it when the call returns a status other than OK and puts
   * it into the error the user sees. */
  void (*set_error)(void* host_ctx, const char* message);
} caravan_host_v1;

/* ---- Parameters a plugin declares, so tools can list them ------------- */
typedef struct caravan_param_info {
  const char* name;          /* short name, upper case, e.g. "THREADS" */
  const char* default_value; /* as text; NULL when there is none */
  const char* description;   /* one line */
} caravan_param_info;

/* ---- The descriptor: frozen for every ABI version ---------------------- */
typedef struct caravan_plugin_descriptor {
  uint32_t magic;     /* CARAVAN_PLUGIN_MAGIC */
  uint32_t abi_major; /* the ABI major version `ops` follows */
  uint32_t abi_minor; /* additions inside that major the plugin knows */
  uint32_t kind;      /* a caravan_plugin_kind */
  size_t struct_size; /* sizeof(caravan_plugin_descriptor) */
  const char* name;   /* short name, e.g. "zmq"; matches the file name */
  const char* version;     /* the plugin's own version text */
  const char* description; /* one line for listings */
  const caravan_param_info* params; /* may be NULL when num_params is 0 */
  size_t num_params;
  const void* ops; /* caravan_van_ops_v1* or caravan_reducer_ops_v1* when abi_major is 1 */
} caravan_plugin_descriptor;

/* The one symbol a plugin exports. Never blocks; may be called more than
 * once and must return the same pointer every time. */
typedef const caravan_plugin_descriptor* (*caravan_plugin_entry_fn)(void);

#if defined(__GNUC__)
#define CARAVAN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CARAVAN_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_PLUGIN_PLUGIN_H */
