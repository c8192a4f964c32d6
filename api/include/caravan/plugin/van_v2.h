/* Caravan van (transport) ABI, major version 2.
 *
 * What changed from major 1 (van_v1.h), and why: in 1 a van reported a
 * finished send by calling the engine back (caravan_send_done_fn) from
 * whichever thread it liked, often its own I/O thread and sometimes from
 * inside send() itself, so the engine had to guard every path against being
 * re-entered. In 2 a van never calls into the engine: it records what
 * happened as events, and the engine collects them with poll(), the way
 * NCCL's net plugins report through test() and libfabric through completion
 * queues. One engine thread polls; sends may come from any thread.
 *
 * A van moves messages between the nodes of one job. A message is an ordered
 * list of segments (at most CARAVAN_VAN_MAX_SEGMENTS_V2); the receiver gets
 * the same segments with the same lengths, in one piece. The engine's wire
 * header travels as segment 0; the van never looks inside the segments.
 *
 * Guarantees every van gives (the conformance kit checks them):
 *  - reliable delivery, or an error: a message is never silently changed;
 *  - messages from one instance to one peer arrive in the order they were
 *    sent, whatever their slots;
 *  - segment boundaries and lengths are kept, for any length from 0 bytes
 *    up to properties().max_message_bytes;
 *  - every accepted send is reported by exactly one SENT event, which
 *    poll() returns, never send() itself;
 *  - send(), release() and interrupt() may be called from any thread, at
 *    the same time as each other and as poll(); poll() is called by one
 *    thread at a time.
 *
 * Addresses are NUL-terminated text chosen by the van (for example
 * "tcp://10.0.0.5:9001"). The engine publishes the text listen() wrote in its
 * node table and hands it unchanged to connect() on the other nodes.
 *
 * Host services are caravan_host_v1 (plugin.h), unchanged.
 *
 * Released: never edited. Additions inside major 2 are appended to
 * caravan_van_ops_v2 and announced by abi_minor; the event and message
 * structs are fixed for the whole major version.
 */
#ifndef CARAVAN_PLUGIN_VAN_V2_H
#define CARAVAN_PLUGIN_VAN_V2_H

#include "caravan/plugin/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CARAVAN_VAN_ABI_MAJOR_V2 2
#define CARAVAN_VAN_ABI_MINOR_V2 1
#define CARAVAN_VAN_MAX_SEGMENTS_V2 8
#define CARAVAN_VAN_MAX_ADDRESS_V2 256

/* Capability bits reported by properties(); the same bits as in major 1. */
#define CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND (1ull << 0) /* send() reads the caller's memory until SENT */
#define CARAVAN_VAN_CAP_V2_RDMA (1ull << 1)           /* remote memory access underneath */
#define CARAVAN_VAN_CAP_V2_DEVICE_MEMORY (1ull << 2)  /* segments may live in GPU memory */

typedef struct caravan_van_properties_v2 {
  size_t struct_size;         /* set by the caller before the call */
  uint64_t caps;              /* CARAVAN_VAN_CAP_V2_* bits */
  size_t max_message_bytes;   /* largest total of one message's segments */
  size_t max_segments;        /* at most CARAVAN_VAN_MAX_SEGMENTS_V2 */
  const char* transport;      /* e.g. "tcp", "efa", "ib"; static text */
} caravan_van_properties_v2;

/* Memory to send. The van reads it until it reports the send's SENT. */
typedef struct caravan_segment_v2 {
  const void* data;
  size_t len;
} caravan_segment_v2;

/* Memory received. Owned by the van, writable by the engine, valid until
 * release(). */
typedef struct caravan_recv_segment_v2 {
  void* data;
  size_t len;
} caravan_recv_segment_v2;

typedef struct caravan_van_message_v2 {
  size_t num_segments;
  caravan_recv_segment_v2 segments[CARAVAN_VAN_MAX_SEGMENTS_V2];
  /* Where the message came from at the transport level, as text (for
   * example "tcp://127.0.0.1:40112"); used to name a misbehaving peer in
   * logs. Never NULL ("unknown" when the van cannot tell); valid until
   * release(). */
  const char* peer;
  void* van_token; /* the van's own bookkeeping; leave untouched */
} caravan_van_message_v2;

typedef enum {
  CARAVAN_VAN_EVENT_RECEIVED = 1, /* `message` holds a message; release() it */
  CARAVAN_VAN_EVENT_SENT = 2      /* the send `send_id` is over; see `status` */
} caravan_van_event_type_v2;

typedef struct caravan_van_event_v2 {
  uint32_t type;          /* a caravan_van_event_type_v2 */
  /* SENT: OK when the message was handed to the transport, or the error
   * that stopped it (CLOSED when its peer was disconnected first). From
   * this event on the van reads none of the send's memory. */
  caravan_status status;
  uint64_t send_id;       /* SENT: the id the engine gave send() */
  caravan_van_message_v2 message; /* RECEIVED */
} caravan_van_event_v2;

typedef struct caravan_van_ops_v2 {
  size_t struct_size; /* sizeof(caravan_van_ops_v2) as the plugin built it */

  /* Creates an instance. Blocks only for local set-up. Fails with
   * UNAVAILABLE when the hardware or library the van needs is missing (say
   * which through host->set_error). `host` outlives the instance. */
  caravan_status (*init)(const caravan_host_v1* host, void** out_ctx);

  /* Destroys the instance: closes every connection, drops unsent messages
   * and frees everything. May be called while another thread is blocked in
   * poll() or send(): those return CLOSED and finalize waits for them. Sends
   * not yet reported by a SENT event are over when finalize returns (the
   * van reads none of their memory any more) and are never reported. No
   * entry may be called with ctx after finalize returns; messages not yet
   * released are invalid then. */
  caravan_status (*finalize)(void* ctx);

  /* Fills `out` (the caller sets out->struct_size). Never blocks. */
  caravan_status (*properties)(void* ctx, caravan_van_properties_v2* out);

  /* Starts accepting connections. `host` is the address to bind and
   * advertise (an IPv4 or IPv6 literal, or a host name); `port` is a port
   * number or 0 for any free port. Writes the NUL-terminated address peers
   * pass to connect() into addr_out (capacity addr_cap, at least
   * CARAVAN_VAN_MAX_ADDRESS_V2). Called once per instance. Errors:
   * INVALID_ARGUMENT for a host or port that cannot be bound (the message
   * names them), IO otherwise. Does not block. */
  caravan_status (*listen)(void* ctx, const char* host, int port, char* addr_out,
                           size_t addr_cap);

  /* Opens the path to `peer`, an engine-chosen id unique in the job, at
   * `address` (text a peer's listen() wrote). May return before the
   * transport connection is up: messages sent meanwhile are queued and
   * delivered once it is. Connecting an id twice is INVALID_ARGUMENT. */
  caravan_status (*connect)(void* ctx, uint64_t peer, const char* address);

  /* Closes the path to `peer`; sends to it not yet over are dropped and
   * reported by SENT events with CLOSED, possibly after disconnect returns.
   * The id may be connected again. Unknown ids are INVALID_ARGUMENT. */
  caravan_status (*disconnect)(void* ctx, uint64_t peer);

  /* Sends one message of `num_segments` segments to a connected peer.
   * `slot`: a nonzero number the engine gives every message of one
   * recurring kind to this peer (a data message's first key, plus one), or
   * 0 for none; a van may keep resources per peer and slot from one message
   * to the next, such as a receive buffer the peer lent for the slot's next
   * message. `send_id`: the engine's name for this send, echoed by its SENT
   * event. Does not block on the network (it may block briefly on a local
   * queue). On OK the van reads the segments' memory until it reports the
   * SENT event, which poll() returns later, exactly once; on any other
   * status there is no event. Errors: INVALID_ARGUMENT (unknown peer, no
   * segments, too many segments, too large), CLOSED, IO. */
  caravan_status (*send)(void* ctx, uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                         size_t num_segments, uint64_t send_id);

  /* Waits up to timeout_ms (0 = do not wait, negative = no limit) until
   * there is at least one event, then writes up to `capacity` of them
   * (oldest first within each kind) to `events` and their number to
   * *num_events. Returns OK with at least one event; TIMEOUT with none when
   * the time ran out or interrupt() was called; CLOSED after finalize
   * started. A malformed transport frame is dropped (and logged through the
   * host) rather than returned. */
  caravan_status (*poll)(void* ctx, int timeout_ms, caravan_van_event_v2* events, size_t capacity,
                         size_t* num_events);

  /* Gives a received message's memory back to the van. Never blocks. */
  caravan_status (*release)(void* ctx, const caravan_van_message_v2* message);

  /* Makes a poll() blocked now, or the next one if none is, return TIMEOUT
   * (or its events) at once. Never blocks. The engine uses it to stop. */
  caravan_status (*interrupt)(void* ctx);

  /* ---- Minor 1: receiving into the engine's memory. Both entries may be
   * NULL (the van keeps every message in its own memory, as in 2.0); a van
   * has both or neither. ---- */

  /* Lends `len` bytes at `buf` for segment `segment` of a message the
   * engine expects on `slot` (the slot its sender passes to send()): the
   * van may write that segment straight there instead of into its own
   * memory, saving the engine a copy. The first message to arrive on the
   * slot whose segment `segment` has exactly `len` bytes takes the lend; its
   * RECEIVED event's segment then points at `buf`, and its release() frees
   * nothing there. A message that does not match leaves the lend in place.
   * A second lend on a slot replaces the first, which is taken back as by
   * unlend. Never blocks on the network; replacing a lend that a message is
   * being read into may wait briefly, as unlend does. Errors:
   * INVALID_ARGUMENT (slot 0, no buffer, segment out of range). */
  caravan_status (*lend)(void* ctx, uint64_t slot, size_t segment, void* buf, size_t len);

  /* Takes the lend on `slot` back. Once it returns, the van writes nothing
   * more to that buffer: a message being written there, or written and not
   * yet taken by a poll() call for its events, is moved into the van's own
   * memory (and dropped, with a log line, if that memory cannot be had).
   * An event a poll() call has already taken keeps pointing at the buffer,
   * even if that poll() has not returned yet; the engine takes a lend back
   * only when it no longer wants such a message. A slot without a lend is
   * OK. Any thread; may wait briefly for a poll() writing into the buffer. */
  caravan_status (*unlend)(void* ctx, uint64_t slot);
} caravan_van_ops_v2;

/* The size of a 2.0 table, which the engine still loads: everything up to
 * the minor 1 entries. */
#define CARAVAN_VAN_OPS_V2_0_SIZE offsetof(caravan_van_ops_v2, lend)

#ifdef __cplusplus
}
#endif

#endif /* CARAVAN_PLUGIN_VAN_V2_H */
