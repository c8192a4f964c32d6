// One control message, parsed and checked before anyone acts on it. The
// scheduler and the nodes see the control channel only in this form, so
// whatever a peer sends, a handler meets either a well-formed message of a
// type it expects or nothing at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/control/node_info.h"
#include "engine/wire/header.h"

namespace caravan {

// Who receives: the scheduler takes REGISTER, BARRIER and HEARTBEAT; a
// server or worker takes NODE_TABLE, BARRIER_DONE, ABORT and HEARTBEAT.
enum class ControlReceiver { kScheduler, kNode };

struct ControlMessage {
  wire::Header head;            // a barrier's group is head.cmd, kFinal in head.flags
  NodeInfo node;                // REGISTER: the node that registers
  std::vector<NodeInfo> table;  // NODE_TABLE
  std::string text;             // ABORT: why the job ended
};

// Parses `body` as the message `head` announces. On failure returns false
// and says what is wrong in *why (the caller names the peer).
bool parse_control_message(ControlReceiver receiver, const wire::Header& head,
                           const std::vector<uint8_t>& body, ControlMessage* out,
                           std::string* why);

// The body parse_control_message expects for `msg` (REGISTER, NODE_TABLE and
// ABORT carry one; the others none).
std::vector<uint8_t> control_body(const ControlMessage& msg);

}  // namespace caravan
