// What the scheduler knows about each node, and the control-message bodies
// that carry it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/config.h"

namespace caravan {

// ps-lite's node ids, so PS_VERBOSE logs read the same.
constexpr int kSchedulerId = 1;
inline int server_id(int rank) { return 8 + 2 * rank; }
inline int worker_id(int rank) { return 9 + 2 * rank; }

// Node groups for barriers, combinable by addition (ps-lite's values).
constexpr int kSchedulerGroup = 1;
constexpr int kServerGroup = 2;
constexpr int kWorkerGroup = 4;

struct NodeInfo {
  int id = 0;
  Role role = Role::kWorker;
  int rank = -1;
  int preferred_rank = -1;
  std::string host;
  std::string van_address;
  int pid = 0;
  // REGISTER only: the settings that must agree across the job, as this
  // node has them (engine/control/job_settings.h). Absent from a node
  // table, and from a REGISTER of a build that predates them.
  std::vector<std::pair<std::string, std::string>> settings;
  // REGISTER only, in its header (cmd: the generation + 1, 0 for none;
  // timestamp: the nodes): a node that comes back after a regroup
  // (CARAVAN_ELASTIC) names the generation it was last in and how many
  // nodes that had, so that a scheduler started again while the job
  // regroups can take the regroup over.
  int last_generation = -1;
  int last_generation_nodes = 0;

  // "worker 1 (pid 42 at 10.0.0.5)"
  std::string describe() const;
};

std::vector<uint8_t> encode_register(const NodeInfo& n);
NodeInfo decode_register(const std::vector<uint8_t>& body);  // throws on malformed
std::vector<uint8_t> encode_node_table(const std::vector<NodeInfo>& nodes);
std::vector<NodeInfo> decode_node_table(const std::vector<uint8_t>& body);

// Ranks: preferred ranks are honoured; the rest are filled in order of
// (host, van address), so the assignment is deterministic. Throws a config
// error naming the conflicting nodes, unless `resuming`: after a suspend a
// node asks for its old rank (or the one resume() named), and one that is
// taken or out of the new range is a wish, not an error: it gets a free
// rank, said in a warning.
void assign_ranks(std::vector<NodeInfo>& nodes, int num_servers, int num_workers,
                  bool resuming = false);

}  // namespace caravan
