/* Caravan compressor (gradient compression) ABI, major version 1.
 *
 * A compressor turns one partition of a gradient (count elements of a
 * floating dtype, in host memory) into fewer bytes, and those bytes back
 * into count elements. The engine chooses one per tensor by name: the
 * tensor's parameter byteps_compressor_type=<name> loads
 * libcaravan-compressor-<name>.so (plugin.h's search path). It keeps one
 * state per partition, made by create() from the tensor's parameters.
 *
 * What the engine does around a compressor, so a plugin does only this:
 *  - a worker compresses each partition before it pushes it; the server
 *    decompresses every worker's push into the round's sum (accumulate),
 *    compresses the sum for the answer, and every worker decompresses the
 *    answer into its tensor (BytePS's two-way scheme);
 *  - error feedback (byteps_error_feedback_type=vanilla) and momentum
 *    (byteps_momentum_type=nesterov) wrap every compressor: the engine
 *    adds the carried error before compress() and keeps what compress()
 *    lost, from decompress() of its own output, on the side that
 *    compressed (docs/compression.md);
 *  - every compress() and decompress() call gets a 64-bit `seed` the
 *    engine derives from the tensor's byteps_seed, the partition's key and
 *    the round, identical on every worker and server of the job for the
 *    same partition and round. A random compressor draws from it alone,
 *    so its choices agree across the job (random-k's indices are the same
 *    on every worker, and need not travel), and decompress() of a payload
 *    gets the seed its compress() had. The seed is the same for the push
 *    and the pull of a round (random-k's sum comes back on the indices
 *    its pushes chose); a compressor that wants them apart mixes
 *    `direction` in;
 *  - both calls say which way the bytes go (`direction`): a worker's
 *    push to the server, or the server's sum pulled by the workers. A
 *    compressor may treat them differently, as long as the result of a
 *    round, decompress(PULL) of compress(PULL) of the sum of the
 *    decompress(PUSH) of every worker's compress(PUSH), is what it
 *    promises (random-k scales by n/k once, on the pull, so the round is
 *    unbiased).
 *
 * The engine calls compress() and decompress() on a state from one thread
 * at a time; different states may be used at once from different threads.
 * Arrays need no alignment. Other rules as plugin.h.
 *
 * Released: never edited; additions inside major 1 are appended to
 * caravan_compressor_ops_v1 and announced by abi_minor.
 */
#ifndef CARAVAN_PLUGIN_COMPRESSOR_V1_H
#define CARAVAN_PLUGIN_COMPRESSOR_V1_H

#include "caravan/plugin/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The descriptor's kind for a compressor (caravan_plugin_kind's values 1
 * and 2 are the van and the reducer). */
#define CARAVAN_PLUGIN_KIND_COMPRESSOR 3

#define CARAVAN_COMPRESSOR_ABI_MAJOR_V1 1
#define CARAVAN_COMPRESSOR_ABI_MINOR_V1 0

/* One of a tensor's parameters, as the user gave it: "byteps_compressor_k"
 * and "0.01". Both strings stay valid during the call only. */
/* `direction` of compress() and decompress(). */
#define CARAVAN_COMPRESSOR_PUSH 0 /* a worker's values, to its server */
#define CARAVAN_COMPRESSOR_PULL 1 /* the server's sum, to every worker */

typedef struct caravan_compressor_param_v1 {
  const char* key;
  const char* value;
} caravan_compressor_param_v1;

typedef struct caravan_compressor_ops_v1 {
  size_t struct_size; /* sizeof(caravan_compressor_ops_v1) as the plugin built it */

  /* Creates a plugin instance (one per process). Blocks only for local
   * set-up. */
  caravan_status (*init)(const caravan_host_v1* host, void** out_ctx);

  /* Frees the instance; every state was destroyed before. */
  caravan_status (*finalize)(void* ctx);

  /* A state for partitions of `count` (> 0) elements of `dtype`, with the
   * tensor's parameters: every pair the user gave for the tensor; a
   * compressor reads those it knows and ignores the others. Sets
   * *max_bytes_out to the most bytes compress() will ever write for this
   * state. Errors: INVALID_ARGUMENT for a parameter it needs that is
   * missing or a value it cannot use (set_error naming the key and the
   * value), UNSUPPORTED for a dtype it does not compress (set_error names
   * those it does). */
  caravan_status (*create)(void* ctx, const caravan_compressor_param_v1* params,
                           size_t num_params, caravan_dtype dtype, size_t count,
                           void** state_out, size_t* max_bytes_out);

  /* Frees a state. */
  caravan_status (*destroy)(void* ctx, void* state);

  /* Compresses `src` (the state's count elements) into `dst`, which has
   * room for the state's max bytes; *len_out = the bytes written. */
  caravan_status (*compress)(void* ctx, void* state, const void* src, void* dst,
                             size_t* len_out, uint64_t seed, int direction);

  /* Decodes `len` bytes that compress() wrote (in any process of the job,
   * for a state made with the same parameters, dtype and count, and the
   * same seed and direction) into the state's count elements of `dst`: dst = decoded,
   * or dst += decoded when `accumulate` is not 0. INVALID_ARGUMENT when
   * the bytes cannot be compress()'s output (a length or an index out of
   * range), and then dst is left as it was. */
  caravan_status (*decompress)(void* ctx, void* state, const void* src, size_t len, void* dst,
                               int accumulate, uint64_t seed, int direction);
} caravan_compressor_ops_v1;

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_PLUGIN_COMPRESSOR_V1_H */
