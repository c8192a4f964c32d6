#include "engine/control/control_message.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "engine/wire/bytes.h"

namespace caravan {

const char* control_type_name(wire::Type t) {
  switch (t) {
    case wire::Type::kKV:
      return "KV";
    case wire::Type::kAck:
      return "ACK";
    case wire::Type::kProbe:
      return "PROBE";
    case wire::Type::kRegister:
      return "REGISTER";
    case wire::Type::kNodeTable:
      return "NODE_TABLE";
    case wire::Type::kBarrier:
      return "BARRIER";
    case wire::Type::kBarrierDone:
      return "BARRIER_DONE";
    case wire::Type::kAbort:
      return "ABORT";
    case wire::Type::kHeartbeat:
      return "HEARTBEAT";
    case wire::Type::kAuthHello:
      return "AUTH_HELLO";
    case wire::Type::kAuthChallenge:
      return "AUTH_CHALLENGE";
    case wire::Type::kAuthProof:
      return "AUTH_PROOF";
    case wire::Type::kBarrierWaiting:
      return "BARRIER_WAITING";
    case wire::Type::kReport:
      return "REPORT";
  }
  return "?";
}

namespace {

bool expected_by(ControlReceiver r, wire::Type t) {
  switch (t) {
    case wire::Type::kHeartbeat:
    case wire::Type::kAuthProof:
    case wire::Type::kBarrierWaiting:
    case wire::Type::kAbort:
      return true;
    case wire::Type::kAuthHello:
    case wire::Type::kRegister:
    case wire::Type::kBarrier:
    case wire::Type::kReport:
      return r == ControlReceiver::kScheduler;
    case wire::Type::kAuthChallenge:
    case wire::Type::kNodeTable:
    case wire::Type::kBarrierDone:
      return r == ControlReceiver::kNode;
    case wire::Type::kKV:
    case wire::Type::kAck:
    case wire::Type::kProbe:
      return false;
  }
  return false;
}

// Barrier groups are sums of kSchedulerGroup, kServerGroup and kWorkerGroup;
// the shutdown barrier (kFinal) ignores its group, which may then be 0.
constexpr int kAllGroups = kSchedulerGroup + kServerGroup + kWorkerGroup;

bool check_group(const wire::Header& h, std::string* why) {
  bool final = h.flags & wire::kFinal;
  if ((h.flags & wire::kSuspend) && (!final || h.type == wire::Type::kBarrierWaiting)) {
    *why = std::string(control_type_name(h.type)) +
           " with the suspend flag but not as the shutdown barrier";
    return false;
  }
  if (h.cmd < (final ? 0 : 1) || h.cmd > kAllGroups) {
    *why = std::string(control_type_name(h.type)) + " for node group " + std::to_string(h.cmd) +
           ", which is no combination of scheduler (1), servers (2) and workers (4)";
    return false;
  }
  return true;
}

bool check_node(const NodeInfo& n, std::string* why) {
  if (n.preferred_rank < -1 || n.rank < -1) {
    *why = "rank " + std::to_string(n.rank) + " / preferred rank " +
           std::to_string(n.preferred_rank) + " of " + n.describe() + " is negative";
    return false;
  }
  return true;
}

}  // namespace

bool parse_control_message(ControlReceiver receiver, const wire::Header& head,
                           const std::vector<uint8_t>& body, ControlMessage* out,
                           std::string* why) {
  if (!expected_by(receiver, head.type)) {
    *why = std::string("a ") + control_type_name(head.type) + " message does not belong on the " +
           (receiver == ControlReceiver::kScheduler ? "scheduler's" : "node's") +
           " end of the control channel";
    return false;
  }
  out->head = head;
  switch (head.type) {
    case wire::Type::kRegister:
    case wire::Type::kNodeTable:
      try {
        if (head.type == wire::Type::kRegister) {
          out->node = decode_register(body);
          out->node.last_generation = head.cmd - 1;
          out->node.last_generation_nodes = head.timestamp;
          if (head.cmd < 0 || head.timestamp < 0) {
            *why = "a REGISTER whose last generation (" + std::to_string(head.cmd - 1) +
                   ") or its node count (" + std::to_string(head.timestamp) + ") is negative";
            return false;
          }
          if (out->node.role == Role::kScheduler) {
            *why = "a REGISTER from a second scheduler";
            return false;
          }
          if (out->node.van_address.empty()) {
            *why = "a REGISTER of " + out->node.describe() + " without a van address";
            return false;
          }
          return check_node(out->node, why);
        }
        out->table = decode_node_table(body);
        for (const NodeInfo& n : out->table)
          if (!check_node(n, why)) return false;
        return true;
      } catch (const std::exception& e) {
        *why = std::string("malformed ") + control_type_name(head.type) + " body of " +
               std::to_string(body.size()) + " bytes: " + e.what();
        return false;
      }
    case wire::Type::kReport: {
      // The job nonce (empty without a token), the barriers passed (a
      // count, then key and count each), then the node table.
      try {
        wire::Reader r(body.data(), body.size());
        std::string nonce = r.str(kAuthNonceBytes);
        if (!nonce.empty() && nonce.size() != kAuthNonceBytes) {
          *why = "a REPORT with a job nonce of " + std::to_string(nonce.size()) +
                 " bytes (it carries 0 or " + std::to_string(kAuthNonceBytes) + ")";
          return false;
        }
        out->auth.assign(nonce.begin(), nonce.end());
        int32_t keys = r.i32();
        if (keys < 0 || keys > kMaxReportedBarrierKeys) {
          *why = "a REPORT of " + std::to_string(keys) + " barrier keys (at most " +
                 std::to_string(kMaxReportedBarrierKeys) + ")";
          return false;
        }
        for (int32_t i = 0; i < keys; ++i) {
          int32_t key = r.i32();
          out->barriers[key] = r.i32();
        }
        size_t table_at = body.size() - r.left();
        out->table = decode_node_table(std::vector<uint8_t>(body.begin() + table_at, body.end()));
      } catch (const std::exception& e) {
        *why = "malformed REPORT body of " + std::to_string(body.size()) + " bytes: " + e.what();
        return false;
      }
      bool sender_listed = false;
      for (const NodeInfo& n : out->table) {
        if (!check_node(n, why)) return false;
        sender_listed = sender_listed || n.id == head.sender;
      }
      if (!sender_listed) {
        *why = "a REPORT from node " + std::to_string(head.sender) + ", which its table lacks";
        return false;
      }
      return true;
    }
    case wire::Type::kAbort:
      if (receiver == ControlReceiver::kScheduler && head.cmd != 0 && head.cmd != kAbortRegroup &&
          head.cmd != kAbortLeftOut) {
        *why = "an ABORT of kind " + std::to_string(head.cmd) + " from a node (it sends 0: it " +
               "ends the job, " + std::to_string(kAbortRegroup) +
               ": it takes the scheduler's regroup, or " + std::to_string(kAbortLeftOut) +
               ": it leaves the job)";
        return false;
      }
      if (head.cmd != 0 && head.cmd != kAbortRefused && head.cmd != kAbortNotNeeded &&
          head.cmd != kAbortRegroup && head.cmd != kAbortLeftOut) {
        *why = "an ABORT of kind " + std::to_string(head.cmd) + " (0: the job ended, " +
               std::to_string(kAbortRefused) + ": this node is refused, " +
               std::to_string(kAbortNotNeeded) + ": the job resumed without this server, " +
               std::to_string(kAbortRegroup) + ": the job regroups without a lost node, " +
               std::to_string(kAbortLeftOut) + ": the job went on without this node)";
        return false;
      }
      out->text.assign(body.begin(), body.end());
      return true;
    case wire::Type::kAuthHello:
    case wire::Type::kAuthChallenge:
    case wire::Type::kAuthProof: {
      size_t want = head.type != wire::Type::kAuthProof  ? kAuthNonceBytes
                    : receiver == ControlReceiver::kNode ? kSchedulerProofBytes
                                                         : kNodeProofBytes;
      if (body.size() != want) {
        *why = std::string("an ") + control_type_name(head.type) + " message with a body of " +
               std::to_string(body.size()) + " bytes (it carries " + std::to_string(want) + ")";
        return false;
      }
      out->auth = body;
      return true;
    }
    case wire::Type::kBarrierWaiting:
    case wire::Type::kBarrier:
    case wire::Type::kBarrierDone:
      if (!check_group(head, why)) return false;
      if (head.type == wire::Type::kBarrierWaiting) {
        // The question goes to the scheduler, the answer (a text) comes back.
        bool asks = head.flags & wire::kRequest;
        if (asks != (receiver == ControlReceiver::kScheduler)) {
          *why = std::string("a BARRIER_WAITING ") + (asks ? "question" : "answer") +
                 " sent to a " + (asks ? "node" : "scheduler");
          return false;
        }
        if (!asks) {
          out->text.assign(body.begin(), body.end());
          return true;
        }
      }
      [[fallthrough]];
    case wire::Type::kHeartbeat:
      if (!body.empty()) {
        *why = std::string("a ") + control_type_name(head.type) + " message with a body of " +
               std::to_string(body.size()) + " bytes (it carries none)";
        return false;
      }
      return true;
    case wire::Type::kKV:
    case wire::Type::kAck:
    case wire::Type::kProbe:
      break;
  }
  *why = "unhandled message type";
  return false;
}

std::vector<uint8_t> control_body(const ControlMessage& msg) {
  switch (msg.head.type) {
    case wire::Type::kRegister:
      return encode_register(msg.node);
    case wire::Type::kNodeTable:
      return encode_node_table(msg.table);
    case wire::Type::kAbort:
    case wire::Type::kBarrierWaiting:
      return {msg.text.begin(), msg.text.end()};
    case wire::Type::kAuthHello:
    case wire::Type::kAuthChallenge:
    case wire::Type::kAuthProof:
      return msg.auth;
    case wire::Type::kReport: {
      wire::Writer w;
      w.str(std::string(msg.auth.begin(), msg.auth.end()));
      w.i32(static_cast<int32_t>(msg.barriers.size()));
      for (auto [key, passed] : msg.barriers) {
        w.i32(key);
        w.i32(passed);
      }
      std::vector<uint8_t> body = std::move(w.bytes());
      std::vector<uint8_t> table = encode_node_table(msg.table);
      body.insert(body.end(), table.begin(), table.end());
      return body;
    }
    default:
      return {};
  }
}

}  // namespace caravan
