/* Caravan public C API: push_pull for worker programs.
 *
 * A worker program calls caravan_init() once, then caravan_push_pull() (or
 * the asynchronous form) for every gradient tensor and step, then
 * caravan_shutdown(). The job is described by the environment
 * (DMLC_ROLE=worker, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER,
 * DMLC_NUM_SERVER, ...; see README.md); caravan-launch sets it up locally.
 *
 * Every call returns 0 (or a non-negative value) on success and a negative
 * CARAVAN_ERR_* code on failure; caravan_strerror() gives the message, with
 * the details of the most recent failure on the calling thread. The library
 * never aborts or exits its caller's process. Every blocking call has a
 * deadline (CARAVAN_OP_TIMEOUT seconds, default 600; start-up uses
 * CARAVAN_CONNECT_TIMEOUT, default 60) and fails naming who it waited for.
 *
 * Thread safety: all calls may be made from any thread once caravan_init()
 * has returned; caravan_init() and caravan_shutdown() must not race with
 * other calls.
 *
 * Compiles as C99 and as C++.
 */
#ifndef CARAVAN_CARAVAN_H
#define CARAVAN_CARAVAN_H

#include <stddef.h>

#include "caravan/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CARAVAN_API_VERSION_MAJOR 1
#define CARAVAN_API_VERSION_MINOR 7

/* Error codes (negative). */
enum {
  CARAVAN_OK = 0,
  CARAVAN_ERR_INVALID_ARGUMENT = -1, /* NULL pointer, zero count, bad dtype, bad handle */
  CARAVAN_ERR_NOT_INITIALIZED = -2,  /* called before caravan_init() or after shutdown */
  CARAVAN_ERR_MISMATCH = -3,         /* a name reused with another count or dtype */
  CARAVAN_ERR_BUSY = -4,             /* that tensor already has a push_pull in flight */
  CARAVAN_ERR_TIMEOUT = -5,          /* a deadline passed; the message says who was missing */
  CARAVAN_ERR_PEER_LOST = -6,        /* a node of the job failed or the job was aborted */
  CARAVAN_ERR_CONFIG = -7,           /* a malformed or missing environment variable */
  CARAVAN_ERR_PLUGIN = -8,           /* a plugin could not be loaded or initialised */
  CARAVAN_ERR_TRANSPORT = -9,        /* the van failed to send or receive */
  CARAVAN_ERR_STATE = -10,           /* init twice, or a call in the wrong role */
  CARAVAN_ERR_INTERNAL = -11,        /* a bug: please report it with the message */
  CARAVAN_ERR_SERVER = -12,          /* a server refused the request; the message says why */
  /* Since 1.6: with CARAVAN_ELASTIC=1 the job lost a node and goes on
   * without it; this operation was abandoned: call caravan_rejoin(). */
  CARAVAN_ERR_REGROUPED = -13
};

typedef struct caravan_handle_s* caravan_handle;

/* Joins the job the environment describes as a worker: loads the van,
 * registers with the scheduler, connects to the servers and waits at the
 * start-up barrier. Blocks up to CARAVAN_CONNECT_TIMEOUT seconds. With
 * DMLC_NUM_WORKER=1 it needs no scheduler or server (unless
 * BYTEPS_FORCE_DISTRIBUTED=1); with BYTEPS_LOCAL_SIZE > 1 it first meets
 * the other worker processes of this machine, and only local rank 0 joins
 * the scheduler and servers.
 * Errors: CONFIG (names the variable and value), PLUGIN (lists every path
 * tried), TIMEOUT (names the missing nodes), PEER_LOST, STATE (already
 * initialised). */
int caravan_init(void);

/* Waits for this worker's operations in flight, then leaves the job at the
 * shutdown barrier (all workers and servers) and frees everything. Blocks
 * until every worker has called it or CARAVAN_OP_TIMEOUT passes. Handles
 * not yet waited for become invalid. After CARAVAN_ERR_REGROUPED without
 * caravan_rejoin(), it rejoins first, so that the others do not wait for
 * this worker in the job's next generation. Errors: NOT_INITIALIZED,
 * TIMEOUT, PEER_LOST (the job still ends for this process). */
int caravan_shutdown(void);

/* This worker's rank in 0..size-1 (machine * BYTEPS_LOCAL_SIZE + local
 * rank), or NOT_INITIALIZED. Never blocks. */
int caravan_rank(void);

/* The number of worker processes in the job (DMLC_NUM_WORKER *
 * BYTEPS_LOCAL_SIZE), or NOT_INITIALIZED. Never blocks. */
int caravan_size(void);

/* Sums `data` (count elements of dtype) over all workers, in place: on
 * return, data holds the element-wise sum. `name` identifies the tensor: the
 * same name must have the same count and dtype on every worker and every
 * call. Higher `priority` goes first. Blocks until the sum arrived or the
 * deadline passed. Errors: INVALID_ARGUMENT, NOT_INITIALIZED, MISMATCH,
 * BUSY, TIMEOUT, PEER_LOST, TRANSPORT, SERVER. */
int caravan_push_pull(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int priority);

/* Starts the same operation and returns at once with a handle in *out.
 * `data` must stay valid and untouched until caravan_wait() returned or
 * caravan_poll() returned 1. Errors as caravan_push_pull() (those found
 * before sending); later errors come from caravan_wait(). */
int caravan_push_pull_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int priority, caravan_handle* out);

/* 1 when the operation is done (successfully: the handle then still needs
 * caravan_wait() to be released), 0 when pending, a negative error when it
 * failed (the handle too still needs caravan_wait(), which returns at once
 * with the same error). Never blocks. */
int caravan_poll(caravan_handle h);

/* Blocks until the operation ends or the deadline passes, releases the
 * handle, and returns 0 or the operation's negative error. */
int caravan_wait(caravan_handle h);

/* ---- Since 1.1 ---- */

/* This process's index among the worker processes of its machine
 * (BYTEPS_LOCAL_RANK), or NOT_INITIALIZED. Never blocks. */
int caravan_local_rank(void);

/* The number of worker processes on this machine (BYTEPS_LOCAL_SIZE), or
 * NOT_INITIALIZED. Never blocks. */
int caravan_local_size(void);

/* Copies worker `root_rank`'s `data` (count elements of dtype) into `data`
 * on every other worker; the root's data is left as it is. The servers
 * relay the root's bytes without summing them: non-root workers send no
 * values, and the root receives none back. Every worker calls it with the
 * same name, count, dtype and root_rank; a name used for broadcast cannot
 * also be used for push_pull. Blocks until the values arrived (the root:
 * until every worker asked for them) or the deadline passed. Errors:
 * INVALID_ARGUMENT (root_rank outside 0..size-1), NOT_INITIALIZED,
 * MISMATCH (another count, dtype, root or kind of operation for the name,
 * here or on another worker), BUSY, TIMEOUT, PEER_LOST, TRANSPORT,
 * SERVER. */
int caravan_broadcast(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int root_rank, int priority);

/* Starts the same operation and returns at once with a handle in *out,
 * which caravan_poll() and caravan_wait() take as for push_pull. `data`
 * must stay valid and untouched until then. */
int caravan_broadcast_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int root_rank, int priority, caravan_handle* out);

/* ---- Since 1.2: tensors in device memory ---- */

/* push_pull of `data` in CUDA device memory, in place: the result replaces
 * data on the device. The operation is ordered after the work queued so
 * far on `stream` (a cudaStream_t, passed as void*; NULL is the legacy
 * default stream) and the call returns once it is queued, without
 * synchronising the stream or the device. The caller must not touch data
 * until caravan_wait() returned or caravan_poll() returned 1: the result is
 * then on the device, visible to any later work on any stream. Tensor
 * names, priorities and errors are those of caravan_push_pull_async(); a
 * name is either a host tensor or a device tensor, not both.
 * The values travel through page-locked host buffers (one per tensor, kept
 * for reuse up to CARAVAN_STAGING_BYTES, default 4 GiB), partition by
 * partition, so that copies overlap the network. The copies and device
 * queries go through the device reducer plugin (CARAVAN_DEVICE_REDUCER,
 * default "gpu"); a build or machine without it fails with PLUGIN, naming
 * the tensor and why. Host memory given here fails with INVALID_ARGUMENT. */
int caravan_push_pull_device_async(const char* name, void* data, size_t count,
                                   caravan_dtype dtype, int priority, void* stream,
                                   caravan_handle* out);

/* The same, returning when the result is on the device (or it failed). */
int caravan_push_pull_device(const char* name, void* data, size_t count, caravan_dtype dtype,
                             int priority, void* stream);

/* caravan_broadcast_async() on CUDA device memory, ordered on `stream` as
 * caravan_push_pull_device_async() is. */
int caravan_broadcast_device_async(const char* name, void* data, size_t count,
                                   caravan_dtype dtype, int root_rank, int priority,
                                   void* stream, caravan_handle* out);

/* The same, returning when the values are on the device (or it failed). */
int caravan_broadcast_device(const char* name, void* data, size_t count, caravan_dtype dtype,
                             int root_rank, int priority, void* stream);

/* push_pull telemetry: finished push_pulls of the last window
 * (CARAVAN_TELEMETRY_WINDOW_S, default 10 s), each counted from submission
 * to completion as the caller saw it (caravan_wait() returned or
 * caravan_poll() said 1). */
typedef struct caravan_pushpull_stats {
  size_t struct_size; /* set by the caller: sizeof(caravan_pushpull_stats) */
  double window_s;    /* the span covered: the window, or the job's life if shorter */
  unsigned long long operations;
  unsigned long long bytes;
  double mbytes_per_s;                    /* bytes / window_s / 1e6 */
  double p50_us, p90_us, p99_us;          /* latency percentiles; 0 without operations */
} caravan_pushpull_stats;

/* Fills *out with the figures of tensor `name`, or of every tensor when
 * `name` is NULL or empty. Never blocks. Errors: INVALID_ARGUMENT (out NULL
 * or struct_size too small), NOT_INITIALIZED, STATE (BYTEPS_TELEMETRY_ON=0
 * turned telemetry off). */
int caravan_get_pushpull_stats(const char* name, caravan_pushpull_stats* out);

/* ---- Since 1.3: gradient compression ---- */

/* Sets how tensor `name` travels, with `num_params` key/value pairs as
 * BytePS takes them: byteps_compressor_type (onebit, topk, randomk,
 * dithering, or the name of a compressor plugin: the file
 * libcaravan-compressor-<name>.so), byteps_compressor_k,
 * byteps_compressor_onebit_scaling, byteps_error_feedback_type (vanilla),
 * byteps_momentum_type (nesterov), byteps_momentum_mu, byteps_seed,
 * byteps_dithering_partition, byteps_dithering_normalize
 * (docs/compression.md). Workers compress each partition before pushing
 * it, the server sums the decompressed pushes and compresses the sum, and
 * each worker gets that back decompressed: push_pull's result is then an
 * approximation of the sum. Call it before the tensor's first push_pull,
 * with the same pairs on every worker (the servers refuse pushes whose
 * pairs differ); calling it again with the same pairs does nothing. A
 * tensor under BYTEPS_MIN_COMPRESS_BYTES (65536) travels uncompressed; a
 * job of one worker sends nothing, so only checks the pairs. The
 * compressor is loaded here; its own parameters (k) are checked at the
 * first push_pull, which knows the tensor's size and dtype. Errors:
 * INVALID_ARGUMENT (NULL name, or NULL keys or values with num_params > 0,
 * or a pair no compressor takes, naming it), NOT_INITIALIZED, PLUGIN (no
 * such compressor, listing the paths tried), MISMATCH (other pairs for
 * the name before, or the tensor already used without them), CONFIG
 * (compression with BYTEPS_ENABLE_ASYNC=1). */
int caravan_declare_tensor(const char* name, const char* const* keys, const char* const* values,
                           size_t num_params);

/* ---- Since 1.4: reduce-scatter and allgather through the servers ---- */

/* Both take a tensor of caravan_size() equal shards: `count` must be a
 * multiple of the size, and rank r's shard is elements
 * [r * count / size, (r + 1) * count / size) of `data`. Every worker calls
 * with the same name, count and dtype; a name is used for one kind of
 * operation only. Where a server runs on a worker's host, that worker's
 * shard is held by it, so the worker's own shard never crosses the network
 * and the links carry what a ring's would; elsewhere each shard spreads
 * over the servers. Errors as caravan_push_pull(), and INVALID_ARGUMENT
 * when count is no multiple of the size. */

/* Sums `data` over all workers, and leaves in this worker's shard of
 * `data` the sum of that shard: each worker sends its whole tensor once
 * and gets back only its shard of the sum (the servers answer the other
 * partitions without values). The other shards of `data` hold either
 * their values as given or their sums: a job whose machines run several
 * worker processes (BYTEPS_LOCAL_SIZE > 1) sums the whole tensor. */
int caravan_reduce_scatter_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                                 int priority, caravan_handle* out);
int caravan_reduce_scatter(const char* name, void* data, size_t count, caravan_dtype dtype,
                           int priority);

/* Copies each worker's shard of `data` into that shard of `data` on every
 * other worker: each worker sends only its shard, and gets the others'
 * (the servers relay them without summing, any dtype). On return every
 * worker's `data` holds every shard, byte for byte. */
int caravan_allgather_async(const char* name, void* data, size_t count, caravan_dtype dtype,
                            int priority, caravan_handle* out);
int caravan_allgather(const char* name, void* data, size_t count, caravan_dtype dtype,
                      int priority);

/* ---- Since 1.5: suspend and resume (BytePS's elastic API) ---- */

/* Waits for this worker's operations in flight, then leaves the job at the
 * shutdown barrier as caravan_shutdown() does, except that the job is
 * suspended rather than ended: its servers and scheduler stay up and wait
 * (CARAVAN_RESUME_TIMEOUT seconds, default 600) for workers to resume it,
 * possibly with other counts. If any worker suspends, the barrier
 * suspends the job; a worker that calls caravan_shutdown() at that barrier
 * leaves it. Not in a job whose scheduler takes part (ps-lite programs).
 * Errors as caravan_shutdown(). */
int caravan_suspend(void);

/* Joins the suspended job again, as caravan_init() does, with the job now
 * `num_workers` machines (DMLC_NUM_WORKER) and `num_servers` servers
 * (DMLC_NUM_SERVER): both variables are set in this process's
 * environment, and BYTEPS_FORCE_DISTRIBUTED=1 when the job had servers
 * (so that a worker alone still uses them). `rank` >= 0 asks for that
 * rank (BytePS's global_rank), -1 for the rank this worker had; a rank
 * that is taken or out of range is not an error: the worker gets a free
 * one (caravan_rank() says which). Waits up to CARAVAN_RESUME_TIMEOUT
 * for the other nodes. Servers beyond the new count leave; new servers
 * and workers started with the new counts join. Tensors start again from
 * their first round, and compression parameters must be declared again.
 * Errors as caravan_init(); INVALID_ARGUMENT for a count below one;
 * STATE when this process has not suspended. */
int caravan_resume(int num_workers, int num_servers, int rank);

/* ---- Since 1.6: surviving a lost node (CARAVAN_ELASTIC=1) ---- */

/* After an operation failed with CARAVAN_ERR_REGROUPED (the job lost a
 * worker or a server and the scheduler re-forms it with the nodes left):
 * leaves the ended generation of the job without waiting for anything
 * (its operations were abandoned, none completes) and joins the next,
 * waiting up to CARAVAN_RESUME_TIMEOUT for the other survivors. This
 * worker asks for the rank it had; ranks stay 0 to caravan_size() - 1,
 * so they may change (caravan_rank() says). Tensors start again from
 * their first round, and compression parameters must be declared again.
 * The step in flight must be redone by every worker: a sum returned to
 * one worker before the loss may not have reached the others.
 * STATE when the job has not regrouped; otherwise errors as
 * caravan_init(). */
int caravan_rejoin(void);

/* ---- Since 1.7: all-to-all through the servers ---- */

/* `send` and `recv` each hold caravan_size() equal blocks of
 * count / caravan_size() elements: block p of `send` goes to worker p, and
 * block r of `recv` comes from worker r (this worker's own block is copied
 * across), byte for byte, any dtype. Each block is relayed by one server
 * to its one receiver, so each worker sends and receives each byte once;
 * where a server runs on the receiver's host, the block goes to that
 * server and crosses the network once, as a direct send would. Every
 * worker calls with the same name, count and dtype; a name is used for one
 * kind of operation only. `send` is only read; the two buffers must not
 * overlap. A job whose machines run several worker processes
 * (BYTEPS_LOCAL_SIZE > 1) makes it of a broadcast of each worker's whole
 * `send`, with caravan_size() times `send`'s bytes held meanwhile: the same
 * results, more bytes. Errors as caravan_push_pull(), and
 * INVALID_ARGUMENT when count is no multiple of the size, `send` is NULL,
 * or the buffers overlap. */
int caravan_alltoall_async(const char* name, const void* send, void* recv, size_t count,
                           caravan_dtype dtype, int priority, caravan_handle* out);
int caravan_alltoall(const char* name, const void* send, void* recv, size_t count,
                     caravan_dtype dtype, int priority);

/* A message for an error code: the details of the most recent failure on
 * this thread when it had that code, otherwise a generic text. The string
 * stays valid until the next Caravan call on this thread. Never NULL. */
const char* caravan_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_CARAVAN_H */
