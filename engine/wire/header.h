// The wire header: the first 72 bytes of every message, on the control
// channel and on every van. Fixed little-endian layout, written field by
// field (never a raw struct), with a magic number, a format version and
// 64-bit segment lengths, all checked on receipt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace caravan::wire {

constexpr uint32_t kMagic = 0x4E565243;  // "CRVN"
// 2: kAck and kWantAck (PS_RESEND). 3: kProbe. 4: kBroadcast.
// 5: kCompressed (a server of 4 would sum compressed bytes as values).
// 6: kBarrierWaiting. 7: kPush without kPull (a reduce-scatter's push of
// another worker's shard, answered without values). 8: kReport.
// 9: ABORT kind 4, kAbortLeftOut (a node of 8 drops it as malformed).
constexpr uint16_t kVersion = 9;
constexpr size_t kHeaderBytes = 72;
constexpr size_t kSegments = 3;  // keys, vals, lens (control: body, -, -)

enum class Type : uint16_t {
  // Data plane (vans).
  kKV = 1,
  kAck = 2,  // PS_RESEND: a kWantAck message arrived (its fields echoed)
  // Start-up: proves a van path both ways before the start-up barrier; a
  // kRequest probe is echoed (without kRequest) over the receiver's own
  // connection back. No segments.
  kProbe = 3,
  // Control plane (scheduler TCP channel).
  // A node that comes back after a regroup (CARAVAN_ELASTIC) says from
  // which generation (cmd: it + 1; 0 none) of how many nodes (timestamp).
  kRegister = 10,
  kNodeTable = 11,
  kBarrier = 12,
  kBarrierDone = 13,
  kAbort = 14,
  kHeartbeat = 15,  // both ways: I am alive
  // CARAVAN_JOB_TOKEN's challenge-response, before any other control message.
  kAuthHello = 16,      // node -> scheduler: its nonce
  kAuthChallenge = 17,  // scheduler -> node: the scheduler's nonce
  kAuthProof = 18,      // both ways: the HMAC (from the scheduler, with the job nonce)
  // A node whose barrier timed out asks (kRequest; group in cmd, kFinal as
  // in its BARRIER) which nodes the scheduler still waits for; the answer
  // names them as text, so the node's error can say who held it up.
  kBarrierWaiting = 19,
  // CARAVAN_ELASTIC: a node whose scheduler was lost tells a scheduler
  // started again at the same address the job it is in (the node table,
  // the generation in cmd, and with a token the job nonce); the scheduler
  // answers with NODE_TABLE once it has taken the job over. (NODE_TABLE's
  // cmd is the generation too.) kFinal: the node waits in the shutdown
  // barrier.
  kReport = 20,
};

enum Flags : uint32_t {
  kRequest = 1u << 0,
  kPush = 1u << 1,
  kPull = 1u << 2,
  kFinal = 1u << 3,  // barrier: the shutdown barrier
  // Data plane: routed by (app_id, customer_id) to an application object
  // (the ps-lite layer), which matches responses itself.
  kRouted = 1u << 4,
  kSimple = 1u << 5,  // a SimpleApp message: cmd is the head, vals the body
  kSample = 1u << 6,  // push_pull of BYTEPS_DEBUG_SAMPLE_TENSOR: log its values
  // BYTEPS_ENABLE_IPC: vals is not the values but a body of
  // engine/ipc/messages.h (a slot descriptor, or an attach request).
  kShm = 1u << 7,
  kWantAck = 1u << 8,  // PS_RESEND: acknowledge with kAck; resent until then
  // With kPush | kPull: a broadcast from worker rank `cmd`. Only the root's
  // request carries values; the server answers the others with them once
  // every worker asked, and the root with no values.
  kBroadcast = 1u << 9,
  // With kPush | kPull: vals is the partition compressed by the tensor's
  // compressor (docs/compression.md), and lens its parameters as text
  // (CompressionSpec::text() and "count=<elements>\n", NUL-padded to a
  // multiple of 4), and cmd the worker's round of the tensor (low 31
  // bits), which the server checks. The answer carries the flag too: its
  // vals are the sum, compressed.
  kCompressed = 1u << 10,
  // Control plane, with kFinal: the barrier suspends the job rather than
  // ending it (caravan_suspend). Servers and the scheduler stay up and
  // wait for the workers to resume with new counts.
  kSuspend = 1u << 11,
  // With kBroadcast: relayed to one worker only (a block of an all-to-all).
  // The round is the root's request and one other worker's; that one gets
  // the root's values, and the root no values.
  kDirect = 1u << 12,
};

struct Header {
  Type type = Type::kKV;
  uint32_t flags = 0;
  int32_t sender = 0;
  int32_t recipient = 0;
  int32_t app_id = 0;
  // Routed (ps-lite) messages: the application object. Others: the job's
  // generation (KVEndpoint::set_generation), echoed in the response.
  int32_t customer_id = 0;
  int32_t timestamp = 0;  // request id, echoed in the response
  int32_t cmd = 0;        // application command; barrier group
  int32_t priority = 0;
  uint8_t dtype = 0;
  // Routed (ps-lite) messages: where the receiver should place the values,
  // as bytedance/ps-lite's dst device (ps::DeviceType, id). Bytes 41..43
  // were zero padding before, and zero still means host memory, device 0,
  // so the format version stays.
  uint8_t device_type = 0;
  int16_t device_id = 0;
  // 0, or a negative CARAVAN_ERR_* in a response. Routed (ps-lite)
  // messages carry no status: it holds bytedance/ps-lite's val_len there.
  int32_t status = 0;
  uint64_t seg_len[kSegments] = {0, 0, 0};
};

void encode(const Header& h, uint8_t out[kHeaderBytes]);

// Checks size, magic, version, type and that every length is at most
// `max_segment_bytes`; on failure returns false and says why in *why.
bool decode(const void* data, size_t len, uint64_t max_segment_bytes, Header* out,
            std::string* why);

// Checks the first `len` bytes of a header that has not fully arrived (magic,
// version and type, as far as they go), so a stream that cannot be ours is
// refused at once rather than after 72 bytes or never. True when nothing
// seen so far is wrong; `len` may be anything, even past the header.
bool plausible_prefix(const void* data, size_t len, std::string* why);

}  // namespace caravan::wire
