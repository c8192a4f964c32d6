// The control channel as the scheduler and the nodes read it: the byte
// stream cut into messages by FrameReader (in chunks of any size), each
// parsed by parse_control_message, node tables then given ranks by
// assign_ranks. Input: one byte choosing the receiving side (bit 0) and the
// chunk size (the rest), then the stream.
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/control/control_message.h"
#include "engine/control/frame_reader.h"
#include "engine/control/node_info.h"
#include "tests/fuzz/fuzz_input.h"

namespace caravan::fuzz {
namespace {

// As the control hub; small enough that a fuzzer can reach it.
constexpr uint64_t kMaxBody = 1 << 16;

void check_ranks(std::vector<NodeInfo> nodes) {
  int servers = 0, workers = 0;
  for (auto& n : nodes) {
    if (n.role == Role::kScheduler) return;  // the scheduler does not take part in assign_ranks
    (n.role == Role::kServer ? servers : workers)++;
  }
  try {
    assign_ranks(nodes, servers, workers);
  } catch (const Error&) {
    return;  // refused, naming the nodes at fault
  }
  std::set<int> ids;
  std::map<Role, std::set<int>> ranks;
  for (auto& n : nodes) {
    int count = n.role == Role::kServer ? servers : workers;
    if (n.rank < 0 || n.rank >= count) broken("assign_ranks gave a rank out of range");
    if (!ranks[n.role].insert(n.rank).second) broken("assign_ranks gave one rank twice");
    if (!ids.insert(n.id).second) broken("assign_ranks gave one id twice");
    if (n.preferred_rank >= 0 && n.rank != n.preferred_rank)
      broken("assign_ranks ignored a preferred rank");
  }
}

void message(ControlReceiver side, const wire::Header& head, const std::vector<uint8_t>& body) {
  ControlMessage msg;
  std::string why;
  if (!parse_control_message(side, head, body, &msg, &why)) {
    if (why.empty()) broken("a control message refused without a reason");
    return;
  }
  // The bodies are canonical: what parses, encoded again, is the same bytes.
  if (control_body(msg) != body) broken("a control body does not survive parse/encode");
  if (head.type == wire::Type::kNodeTable) check_ranks(msg.table);
}

}  // namespace
}  // namespace caravan::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace caravan;
  fuzz::FuzzInput in(data, size);
  uint8_t config = in.byte();
  ControlReceiver side = config & 1 ? ControlReceiver::kScheduler : ControlReceiver::kNode;
  size_t chunk = 1 + (config >> 1);
  FrameReader reader(fuzz::kMaxBody);
  while (in.left() > 0) {
    size_t n = 0;
    const uint8_t* p = in.take(chunk, &n);
    reader.append(p, n);
    for (;;) {
      wire::Header head;
      std::vector<uint8_t> body;
      std::string why;
      FrameReader::Next next = reader.next(&head, &body, &why);
      if (next == FrameReader::Next::kNeedMore) {
        reader.describe_partial();
        break;
      }
      if (next == FrameReader::Next::kMalformed) {
        if (why.empty()) fuzz::broken("a stream refused without a reason");
        return 0;  // the hub drops the connection here
      }
      if (body.size() != head.seg_len[0]) fuzz::broken("body length differs from the header's");
      fuzz::message(side, head, body);
    }
  }
  return 0;
}
