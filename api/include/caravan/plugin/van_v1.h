/* Caravan van (transport) ABI, major version 1.
 *
 * A van moves messages between the nodes of one job. A message is an ordered
 * list of segments (at most CARAVAN_VAN_MAX_SEGMENTS_V1); the receiver gets
 * the same segments with the same lengths, in one piece. The engine's wire
 * header travels as segment 0; the van never looks inside the segments.
 *
 * Guarantees every van gives (the conformance kit checks them):
 *  - reliable delivery, or an error: a message is never silently changed;
 *  - messages from one instance to one peer arrive in the order they were
 *    sent;
 *  - segment boundaries and lengths are kept, for any length from 0 bytes
 *    up to properties().max_message_bytes;
 *  - send() may be called from several threads at once; recv() is called
 *    from one thread at a time; release() may be called from any thread,
 *    concurrently with send() and recv().
 *
 * Addresses are NUL-terminated text chosen by the van (for example
 * "tcp://10.0.0.5:9001"). The engine publishes the text listen() wrote in its
 * node table and hands it unchanged to connect() on the other nodes.
 *
 * Released: never edited. Additions inside major 1 are appended to
 * caravan_van_ops_v1 and announced by abi_minor; a change that breaks the
 * layout is major 2 in a new header.
 */
#ifndef CARAVAN_PLUGIN_VAN_V1_H
#define CARAVAN_PLUGIN_VAN_V1_H

#include "caravan/plugin/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CARAVAN_VAN_ABI_MAJOR_V1 1
#define CARAVAN_VAN_ABI_MINOR_V1 1 /* 1.1 added send_slot */
#define CARAVAN_VAN_MAX_SEGMENTS_V1 8
#define CARAVAN_VAN_MAX_ADDRESS_V1 256

/* Capability bits reported by properties(). */
#define CARAVAN_VAN_CAP_ZERO_COPY_SEND (1ull << 0) /* send() reads the caller's memory until done */
#define CARAVAN_VAN_CAP_RDMA (1ull << 1)           /* remote memory access underneath */
#define CARAVAN_VAN_CAP_DEVICE_MEMORY (1ull << 2)  /* segments may live in GPU memory */

typedef struct caravan_van_properties_v1 {
  size_t struct_size;         /* set by the caller before the call */
  uint64_t caps;              /* CARAVAN_VAN_CAP_* bits */
  size_t max_message_bytes;   /* largest total of one message's segments */
  size_t max_segments;        /* at most CARAVAN_VAN_MAX_SEGMENTS_V1 */
  const char* transport;      /* e.g. "tcp", "efa", "ib"; static text */
} caravan_van_properties_v1;

/* Memory to send. The van reads it until it calls the send's `done`. */
typedef struct caravan_segment_v1 {
  const void* data;
  size_t len;
} caravan_segment_v1;

/* Memory received. Owned by the van, writable by the engine, valid until
 * release(). */
typedef struct caravan_recv_segment_v1 {
  void* data;
  size_t len;
} caravan_recv_segment_v1;

typedef struct caravan_van_message_v1 {
  size_t struct_size;   /* set by the caller before recv() */
  size_t num_segments;
  caravan_recv_segment_v1 segments[CARAVAN_VAN_MAX_SEGMENTS_V1];
  /* Where the message came from at the transport level, as text (for
   * example "tcp://127.0.0.1:40112"); used to name a misbehaving peer in
   * logs. Never NULL; "unknown" when the van cannot tell. */
  const char* peer;
  void* van_token;      /* the van's own bookkeeping; leave untouched */
} caravan_van_message_v1;

/* Called exactly once per accepted send, from any thread (possibly before
 * send() returns), once the van no longer reads the segments' memory.
 * `status` is OK when the message was handed to the transport, or the error
 * that stopped it. Must not block. */
typedef void (*caravan_send_done_fn)(void* cookie, caravan_status status);

typedef struct caravan_van_ops_v1 {
  size_t struct_size; /* sizeof(caravan_van_ops_v1) as the plugin built it */

  /* Creates an instance. Blocks only for local set-up. Fails with
   * UNAVAILABLE when the hardware or library the van needs is missing (say
   * which through host->set_error). `host` outlives the instance. */
  caravan_status (*init)(const caravan_host_v1* host, void** out_ctx);

  /* Destroys the instance: closes every connection, drops unsent messages
   * (their done callbacks run, with CLOSED, before finalize returns), and
   * frees everything. It may be called while another thread is blocked in
   * recv() or send(): those return CLOSED and finalize waits for them. No
   * entry may be called with ctx after finalize returns; messages not yet
   * released are invalid then. */
  caravan_status (*finalize)(void* ctx);

  /* Fills `out` (the caller sets out->struct_size). Never blocks. */
  caravan_status (*properties)(void* ctx, caravan_van_properties_v1* out);

  /* Starts accepting connections. `host` is the address to bind and
   * advertise (an IPv4 or IPv6 literal, or a host name); `port` is a port
   * number or 0 for any free port. Writes the NUL-terminated address peers
   * pass to connect() into addr_out (capacity addr_cap, at least
   * CARAVAN_VAN_MAX_ADDRESS_V1). Called once per instance. Errors:
   * INVALID_ARGUMENT for a host or port that cannot be bound (the message
   * names them), IO otherwise. Does not block. */
  caravan_status (*listen)(void* ctx, const char* host, int port, char* addr_out,
                           size_t addr_cap);

  /* Opens the path to `peer`, an engine-chosen id unique in the job, at
   * `address` (text a peer's listen() wrote). May return before the
   * transport connection is up: messages sent meanwhile are queued and
   * delivered once it is. Connecting an id twice is INVALID_ARGUMENT. */
  caravan_status (*connect)(void* ctx, uint64_t peer, const char* address);

  /* Closes the path to `peer`; queued messages to it are dropped and their
   * done callbacks run with CLOSED, possibly after disconnect returns. The
   * id may be connected again. Unknown ids are INVALID_ARGUMENT. */
  caravan_status (*disconnect)(void* ctx, uint64_t peer);

  /* Sends one message of `num_segments` segments to a connected peer.
   * Does not block on the network (it may block briefly on a local queue).
   * On OK the van owns the send and calls done(cookie, ...) exactly once; on
   * any other status done is never called. Errors: INVALID_ARGUMENT (unknown
   * peer, no segments, too many segments, too large), CLOSED, IO. */
  caravan_status (*send)(void* ctx, uint64_t peer, const caravan_segment_v1* segments,
                         size_t num_segments, caravan_send_done_fn done, void* cookie);

  /* Waits up to timeout_ms (0 = do not wait, negative = no limit) for the
   * next message from any peer and fills `out` (the caller sets
   * out->struct_size). Returns OK with a message, TIMEOUT when none came,
   * CLOSED after finalize started. A malformed transport frame is dropped
   * (and logged through the host) rather than returned. */
  caravan_status (*recv)(void* ctx, int timeout_ms, caravan_van_message_v1* out);

  /* Gives a received message's memory back to the van. Never blocks; may be
   * called from any thread, concurrently with send() and recv(). */
  caravan_status (*release)(void* ctx, caravan_van_message_v1* message);

  /* ---- ABI 1.1 ---- */

  /* Like send(), with `slot`: a nonzero number the engine gives every
   * message of one recurring kind to this peer (a data message's first key,
   * plus one), or 0 for none. A van may keep resources per peer and slot
   * from one message to the next, such as a receive buffer the peer lent
   * for the slot's next message (the RDMA vans' remote-buffer cache). Every
   * guarantee of send() holds unchanged: one order per peer across slots.
   * NULL, or beyond struct_size (a 1.0 table): the engine calls send(). */
  caravan_status (*send_slot)(void* ctx, uint64_t peer, uint64_t slot,
                              const caravan_segment_v1* segments, size_t num_segments,
                              caravan_send_done_fn done, void* cookie);
} caravan_van_ops_v1;

/* The size of a 1.0 table: the least struct_size the engine accepts. */
#define CARAVAN_VAN_OPS_V1_0_SIZE offsetof(caravan_van_ops_v1, send_slot)

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_PLUGIN_VAN_V1_H */
