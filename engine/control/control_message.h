// One control message, parsed and checked before anyone acts on it. The
// scheduler and the nodes see the control channel only in this form, so
// whatever a peer sends, a handler meets either a well-formed message of a
// type it expects or nothing at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/control/node_info.h"
#include "engine/wire/header.h"

namespace caravan {

// Who receives: the scheduler takes AUTH_HELLO, AUTH_PROOF, REGISTER,
// REPORT, BARRIER and HEARTBEAT; a server or worker takes AUTH_CHALLENGE,
// AUTH_PROOF, NODE_TABLE, BARRIER_DONE and HEARTBEAT; both take
// BARRIER_WAITING (the scheduler the question, a node the answer) and
// ABORT (from a node: it ends the job, saying why).
enum class ControlReceiver { kScheduler, kNode };

// ABORT's head.cmd: the job ended (0), or only the receiving connection
// is refused (this value) while the job goes on.
constexpr int32_t kAbortRefused = 1;
// ABORT's head.cmd after a suspend: the workers resumed with fewer
// servers, and this server, not among them, leaves cleanly.
constexpr int32_t kAbortNotNeeded = 2;
// ABORT's head.cmd with CARAVAN_ELASTIC: the job lost a node (the text
// says which) and re-forms without it; this generation ends, and every
// node left registers again for the next. Each answers at once with an
// ABORT of this kind (no text): a node of the ended generation whose
// connection closes before it answered is lost too.
constexpr int32_t kAbortRegroup = 3;
// ABORT's head.cmd with CARAVAN_ELASTIC: the job went on without this
// node, found lost (the text says why), while it was not running (stopped,
// or cut off); it reads this when it runs again, and fails rather than
// taking the closed connection for a lost scheduler. From a node: it
// leaves the job, which regroups without it (a machine of local ranks
// that lost one); the scheduler answers in kind, or ends the job when it
// cannot regroup.
constexpr int32_t kAbortLeftOut = 4;

// A REPORT names at most this many barrier keys (the groups' sums and the
// shutdown barrier: 9).
constexpr int32_t kMaxReportedBarrierKeys = 16;

// Body sizes of the AUTH_* messages (engine/control/control_auth.h).
constexpr size_t kAuthNonceBytes = 32;       // AUTH_HELLO, AUTH_CHALLENGE
constexpr size_t kNodeProofBytes = 32;       // AUTH_PROOF to the scheduler: the HMAC
constexpr size_t kSchedulerProofBytes = 64;  // AUTH_PROOF to a node: the HMAC, the job nonce

struct ControlMessage {
  wire::Header head;            // a barrier's group is head.cmd, kFinal in head.flags
  NodeInfo node;                // REGISTER: the node that registers
  std::vector<NodeInfo> table;  // NODE_TABLE, REPORT
  // ABORT: why the job ended (from a node: why it ends it), or why this
  // node is refused; BARRIER_WAITING's answer: the nodes the barrier still
  // waits for.
  std::string text;
  std::vector<uint8_t> auth;  // AUTH_*: the nonce or proof, as sized above; REPORT: the job nonce
  // REPORT: how many barriers of each key (a group, -1 the shutdown
  // barrier) the node has passed, so that a scheduler taking the job over
  // releases at once a node that missed a completion the others heard.
  std::map<int32_t, int32_t> barriers;
};

// "REGISTER", "AUTH_PROOF", ... for logs.
const char* control_type_name(wire::Type t);

// Parses `body` as the message `head` announces. On failure returns false
// and says what is wrong in *why (the caller names the peer).
bool parse_control_message(ControlReceiver receiver, const wire::Header& head,
                           const std::vector<uint8_t>& body, ControlMessage* out, std::string* why);

// The body parse_control_message expects for `msg` (REGISTER, NODE_TABLE,
// ABORT and BARRIER_WAITING's answer carry one; the others none).
std::vector<uint8_t> control_body(const ControlMessage& msg);

}  // namespace caravan
