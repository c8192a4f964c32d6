/* Caravan reducer (summation) ABI, major version 1.
 *
 * A reducer adds arrays element-wise. Every operation takes an element count
 * (not bytes), a caravan_dtype and a `stream`: NULL for host memory reducers;
 * a cudaStream_t for device reducers, on which the work is enqueued (the call
 * then returns before the work is done; the caller synchronises the stream).
 *
 * Numerics every reducer follows:
 *  - integer types wrap around modulo 2^bits, exactly;
 *  - float16 and bfloat16 are widened to float32 for the add and rounded back
 *    to nearest-even;
 *  - NaN and infinity follow IEEE 754.
 *
 * Pointers need no alignment; any count, 0 included, is valid. Destination
 * and sources may be the same array where noted, and must not otherwise
 * overlap.
 *
 * Released: never edited; additions inside major 1 are appended to
 * caravan_reducer_ops_v1 and announced by abi_minor.
 */
#ifndef CARAVAN_PLUGIN_REDUCER_V1_H
#define CARAVAN_PLUGIN_REDUCER_V1_H

#include "caravan/plugin/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CARAVAN_REDUCER_ABI_MAJOR_V1 1
#define CARAVAN_REDUCER_ABI_MINOR_V1 1

/* Capability bits reported by properties(). */
#define CARAVAN_REDUCER_CAP_HOST_MEMORY (1ull << 0)   /* works on host pointers */
#define CARAVAN_REDUCER_CAP_DEVICE_MEMORY (1ull << 1) /* works on GPU pointers */
#define CARAVAN_REDUCER_CAP_ASYNC_STREAM (1ull << 2)  /* returns before the work is done */
#define CARAVAN_REDUCER_CAP_LOCAL_GROUP (1ull << 3)   /* offers the local_* entries */
/* Since 1.1: offers the device memory services (memory_device to
 * event_done), so the engine can stage a device tensor through host memory. */
#define CARAVAN_REDUCER_CAP_DEVICE_SERVICES (1ull << 4)
/* Since 1.1: offers device_alloc to ipc_event_open, so the worker processes
 * of one machine can sum each other's device tensors (CUDA IPC). */
#define CARAVAN_REDUCER_CAP_DEVICE_IPC (1ull << 5)

/* Largest handle ipc_export and ipc_event_create write. */
#define CARAVAN_REDUCER_MAX_IPC_HANDLE_V1 128

/* Largest id local_id() writes. */
#define CARAVAN_REDUCER_MAX_LOCAL_ID_V1 256

typedef struct caravan_reducer_properties_v1 {
  size_t struct_size; /* set by the caller before the call */
  uint64_t caps;      /* CARAVAN_REDUCER_CAP_* bits */
  uint32_t dtypes;    /* bit (1u << dtype) for every caravan_dtype supported */
  const char* kernel; /* the kernel family chosen at init, e.g. "avx2"; static text */
} caravan_reducer_properties_v1;

typedef struct caravan_reducer_ops_v1 {
  size_t struct_size; /* sizeof(caravan_reducer_ops_v1) as the plugin built it */

  /* Creates an instance and picks its kernels from what the machine offers.
   * UNAVAILABLE when the hardware it needs is missing (explained through
   * host->set_error). Blocks only for local set-up. */
  caravan_status (*init)(const caravan_host_v1* host, void** out_ctx);

  /* Frees the instance. Work it enqueued on the caller's streams is the
   * caller's to synchronise; kernels already launched stay valid. */
  caravan_status (*finalize)(void* ctx);

  /* Fills `out` (the caller sets out->struct_size). Never blocks. */
  caravan_status (*properties)(void* ctx, caravan_reducer_properties_v1* out);

  /* dst[i] += src[i] for i < count. Errors: INVALID_ARGUMENT (NULL pointer
   * with count > 0), UNSUPPORTED (dtype). Blocks until done unless
   * CAP_ASYNC_STREAM. */
  caravan_status (*sum)(void* ctx, void* dst, const void* src, size_t count,
                        caravan_dtype dtype, void* stream);

  /* dst[i] = a[i] + b[i]; dst may be a or b. Errors as sum(). */
  caravan_status (*sum2)(void* ctx, void* dst, const void* a, const void* b, size_t count,
                         caravan_dtype dtype, void* stream);

  /* dst[i] = srcs[0][i] + ... + srcs[num_srcs-1][i] in one pass over memory;
   * dst may be srcs[0]. num_srcs >= 1. The srcs array itself is in host
   * memory (its elements point to device memory for a device reducer). float16 and bfloat16 are accumulated
   * in float32 and rounded once at the end. Errors as sum(). */
  caravan_status (*sum_many)(void* ctx, void* dst, const void* const* srcs, size_t num_srcs,
                             size_t count, caravan_dtype dtype, void* stream);

  /* data[i] *= factor, computed in float64 for float64, and for the other
   * floating types in float32 with factor first rounded to float32; integer
   * types are UNSUPPORTED. */
  caravan_status (*scale)(void* ctx, void* data, size_t count, caravan_dtype dtype,
                          double factor, void* stream);

  /* ---- Optional: collectives among the workers of one machine ----------
   * (BYTEPS_LOCAL_RANK / BYTEPS_LOCAL_SIZE; NCCL on GPUs). NULL, and no
   * CAP_LOCAL_GROUP bit, when the reducer has none. The engine carries the
   * id from local rank 0 to the others. */

  /* Makes the id of a new local group (called on local rank 0). *id_len is
   * the capacity of id_out on entry (at least CARAVAN_REDUCER_MAX_LOCAL_ID_V1)
   * and the id's length on return. Does not block. */
  caravan_status (*local_id)(void* ctx, void* id_out, size_t* id_len);

  /* Joins the group `id` as local_rank of local_size; blocks until every
   * member joined (or fails with TIMEOUT after the reducer's own deadline,
   * saying through set_error what it waited for). */
  caravan_status (*local_join)(void* ctx, const void* id, size_t id_len, int local_rank,
                               int local_size, void** group_out);

  /* Leaves and frees a group; waits for its work in flight. */
  caravan_status (*local_leave)(void* ctx, void* group);

  /* dst on local rank `root` = the sum of every member's src; dst is
   * ignored on the other ranks. dst may equal src. Every member calls it
   * with the same count, dtype and root. Enqueued on `stream`. */
  caravan_status (*local_reduce)(void* ctx, void* group, void* dst, const void* src, size_t count,
                                 caravan_dtype dtype, int root, void* stream);

  /* data on every member = data on local rank `root`. Enqueued on `stream`. */
  caravan_status (*local_broadcast)(void* ctx, void* group, void* data, size_t count,
                                    caravan_dtype dtype, int root, void* stream);

  /* ---- Since 1.1: device memory services (CAP_DEVICE_SERVICES) ---------
   * What the engine needs to carry a tensor in device memory through the
   * network: tell device pointers from host ones, page-locked staging
   * memory, copies ordered on streams, and events to learn when they are
   * done without blocking. A stream or event is an opaque handle (a
   * cudaStream_t / cudaEvent_t for CUDA). Every entry is thread-safe and
   * none blocks on device work. NULL, with no CAP_DEVICE_SERVICES bit, in a
   * reducer without them. */

  /* *device_out = the device ordinal that owns `ptr`, or -1 for host
   * memory (pageable or page-locked) and pointers the reducer does not
   * know. */
  caravan_status (*memory_device)(void* ctx, const void* ptr, int* device_out);

  /* Page-locked host memory of `bytes` (> 0) that copy() moves at full
   * speed; NO_MEMORY when the system refuses. host_free takes it back. */
  caravan_status (*host_alloc)(void* ctx, size_t bytes, void** out);
  caravan_status (*host_free)(void* ctx, void* ptr);

  /* A stream of the reducer's own device, for copies that must not wait
   * behind the caller's work. */
  caravan_status (*stream_create)(void* ctx, void** stream_out);
  caravan_status (*stream_destroy)(void* ctx, void* stream);

  /* Enqueues a copy of `bytes` bytes on `stream`, in whichever direction
   * the two pointers need (device to host, host to device, device to
   * device); returns before it is done. */
  caravan_status (*copy)(void* ctx, void* dst, const void* src, size_t bytes, void* stream);

  /* Events: record marks the point `stream` has reached; stream_wait
   * makes later work on `stream` wait for that point; done sets *done_out
   * to 1 once the point is passed, else 0, without blocking (an event
   * never recorded counts as passed). */
  caravan_status (*event_create)(void* ctx, void** event_out);
  caravan_status (*event_destroy)(void* ctx, void* event);
  caravan_status (*event_record)(void* ctx, void* event, void* stream);
  caravan_status (*stream_wait)(void* ctx, void* stream, void* event);
  caravan_status (*event_done)(void* ctx, void* event, int* done_out);

  /* ---- Since 1.1: between the processes of one machine (CAP_DEVICE_IPC) --
   * Device memory and events another worker process of the machine can
   * use, for summing the machine's device tensors on the device. NULL, with
   * no CAP_DEVICE_IPC bit, in a reducer without them. */

  /* Device memory of `bytes` (> 0) on the reducer's device; device_free
   * takes it back (after the work using it is done). */
  caravan_status (*device_alloc)(void* ctx, size_t bytes, void** out);
  caravan_status (*device_free)(void* ctx, void* ptr);

  /* A handle to memory from device_alloc that another process opens with
   * ipc_open. *handle_len is the capacity of handle_out on entry (at least
   * CARAVAN_REDUCER_MAX_IPC_HANDLE_V1) and the handle's length on return.
   * ipc_open fails (INVALID_ARGUMENT) in the process that exported it. */
  caravan_status (*ipc_export)(void* ctx, const void* ptr, void* handle_out, size_t* handle_len);
  caravan_status (*ipc_open)(void* ctx, const void* handle, size_t handle_len, void** ptr_out);
  caravan_status (*ipc_close)(void* ctx, void* ptr);

  /* An event other processes of the machine can wait for, with its handle
   * (capacity and length as for ipc_export); another process opens it with
   * ipc_event_open. Both kinds are used with event_record, stream_wait and
   * event_done, and freed with event_destroy. */
  caravan_status (*ipc_event_create)(void* ctx, void** event_out, void* handle_out,
                                     size_t* handle_len);
  caravan_status (*ipc_event_open)(void* ctx, const void* handle, size_t handle_len,
                                   void** event_out);
} caravan_reducer_ops_v1;

/* What the engine calls today: init, finalize, properties, sum and
 * sum_many, on host memory with a NULL stream, on the reducer that sums
 * (CARAVAN_REDUCER), which is refused at load when its properties lack
 * CARAVAN_REDUCER_CAP_HOST_MEMORY; and, on a worker given a device tensor,
 * the device memory services of the device reducer (CARAVAN_DEVICE_REDUCER,
 * default "gpu"), which needs CAP_DEVICE_MEMORY and CAP_DEVICE_SERVICES
 * with memory_device to event_done inside struct_size and not NULL; with
 * BYTEPS_LOCAL_SIZE > 1, the machine's device push_pulls are summed on the
 * device when that reducer also has CAP_DEVICE_IPC with device_alloc to
 * ipc_event_open, otherwise in host memory. It does not call
 * yet, though every reducer offers them and the conformance kit checks them:
 *  - sum2: a server's first push becomes the round's accumulator without a
 *    copy, so every later push is a sum() into it; dst = a + b has no place
 *    on that path;
 *  - scale: the engine sums and never averages; the framework layer divides
 *    (caravan.torch, by the number of workers) on its own tensor;
 *  - local_id, local_join, local_leave, local_reduce, local_broadcast: the
 *    engine's local group sums the machine's contributions in shared host
 *    memory with sum_many; these entries work on device memory (NCCL), which
 *    the engine does not hand to reducers yet. When it does, it will call
 *    them only for a reducer with CAP_DEVICE_MEMORY and CAP_LOCAL_GROUP whose
 *    table holds them (inside struct_size and not NULL). */

/* The size of a 1.0 table (1.1 appended the device memory services).
 * The engine accepts any 1.x table that reaches the last entry it calls
 * (see docs/plugin-abi.md), so a 1.0 table keeps loading when entries are
 * appended; it calls an optional entry only when the entry lies inside
 * struct_size and is not NULL. */
#define CARAVAN_REDUCER_OPS_V1_0_SIZE \
  (offsetof(caravan_reducer_ops_v1, local_broadcast) + \
   sizeof(((caravan_reducer_ops_v1*)0)->local_broadcast))

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_PLUGIN_REDUCER_V1_H */
