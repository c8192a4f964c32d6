// Settings that must agree across a job, checked by the scheduler as nodes
// register. Each node reads its own environment, and a node launched with
// another DMLC_NUM_WORKER, BYTEPS_ENABLE_ASYNC or BYTEPS_PARTITION_BYTES
// than the rest used to join quietly and then sum wrongly, average over the
// wrong count, or wait out CARAVAN_OP_TIMEOUT. Now the job ends at start-up
// with the setting, both values and both nodes named.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine/base/config.h"
#include "engine/control/node_info.h"

namespace caravan {

// What this node reports in REGISTER: (setting, value) pairs. `van` is the
// name of the van it loaded ("zmq", "tcp", ...), `van_message_limit` its
// largest message in bytes (0 or SIZE_MAX: none).
std::vector<std::pair<std::string, std::string>> shared_settings(const JobConfig& config,
                                                                 const std::string& van,
                                                                 size_t van_message_limit);

// At the scheduler: why `node` cannot join a job whose scheduler has
// `scheduler` and whose nodes registered so far are `others`, or "" when it
// can. Settings the scheduler does not know are ignored.
std::string settings_conflict(const JobConfig& scheduler, const NodeInfo& node,
                              const std::vector<const NodeInfo*>& others);

// `settings` without DMLC_NUM_WORKER and DMLC_NUM_SERVER: those of a node
// whose counts are the job's to decide (a server after a suspend, a worker
// rejoining after a regroup, a worker new to an elastic job).
void drop_counts(std::vector<std::pair<std::string, std::string>>& settings);

}  // namespace caravan
