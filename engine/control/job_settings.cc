#include "engine/control/job_settings.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "engine/base/env.h"

namespace caravan {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

const std::string* find(const Settings& s, const std::string& name) {
  for (const auto& [k, v] : s)
    if (k == name) return &v;
  return nullptr;
}

// Settings compared between nodes, and which nodes must agree on each.
struct Shared {
  const char* name;
  bool servers;  // servers must agree with each other and with workers
};
// A van checks only its own limit before it sends, and a receiver with a
// lower one drops the message (ZeroMQ and van-tcp hang up on its sender),
// so the sender waited out CARAVAN_OP_TIMEOUT: "van message limit" is
// compared too.
constexpr Shared kShared[] = {
    {"BYTEPS_ENABLE_ASYNC", true},       {"van", true},
    {"van message limit", true},         {"BYTEPS_LOCAL_SIZE", false},
    {"BYTEPS_PARTITION_BYTES", false},   {"BYTEPS_MIN_COMPRESS_BYTES", false},
    {"BYTEPS_ENABLE_MIXED_MODE", false},
};

// "BYTEPS_PARTITION_BYTES=1000", "BYTEPS_PARTITION_BYTES unset", "the van 'tcp'",
// "a van message limit of 1000 bytes".
std::string shown(const std::string& name, const std::string& value) {
  if (name == "van") return "the van '" + value + "'";
  if (name == "van message limit")
    return value == "unlimited" ? "no van message limit"
                                : "a van message limit of " + value + " bytes";
  return value == "unset" ? name + " unset" : name + "=" + value;
}

// What to set the same everywhere for setting `name` of `node`.
std::string remedy(const std::string& name, const NodeInfo& node) {
  if (name == "van") return "CARAVAN_VAN (or DMLC_ENABLE_RDMA)";
  if (name == "van message limit") {
    const std::string* van = find(node.settings, "van");
    std::string upper = van ? *van : "<VAN>";
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return "CARAVAN_VAN_" + upper + "_MAX_MESSAGE_BYTES";
  }
  return "it";
}

// A number read from another node's report; -1 when it is not one.
long long number(const std::string* text) {
  if (!text || text->empty()) return -1;
  char* end = nullptr;
  long long v = std::strtoll(text->c_str(), &end, 10);
  return *end ? -1 : v;
}

std::string heartbeat_text(int interval, int timeout) {
  return interval <= 0 ? "PS_HEARTBEAT_INTERVAL=0 (off)"
                       : "PS_HEARTBEAT_INTERVAL=" + std::to_string(interval) +
                             " and PS_HEARTBEAT_TIMEOUT=" + std::to_string(timeout);
}

// Heartbeats run both ways: each side that sends them also counts the
// other as lost after its PS_HEARTBEAT_TIMEOUT of silence.
std::string heartbeat_conflict(const JobConfig& sched, const NodeInfo& n) {
  long long interval = number(find(n.settings, "PS_HEARTBEAT_INTERVAL"));
  long long timeout = number(find(n.settings, "PS_HEARTBEAT_TIMEOUT"));
  if (interval < 0 || timeout < 0) return "";
  bool sched_watches = sched.heartbeat_interval_s > 0, node_watches = interval > 0;
  bool ok = sched_watches == node_watches &&
            (!sched_watches ||
             (interval < sched.heartbeat_timeout_s && sched.heartbeat_interval_s < timeout));
  if (ok) return "";
  return n.describe() + " has " +
         heartbeat_text(static_cast<int>(interval), static_cast<int>(timeout)) +
         " but the scheduler has " +
         heartbeat_text(sched.heartbeat_interval_s, sched.heartbeat_timeout_s) +
         ", so one would count the other as lost: set PS_HEARTBEAT_INTERVAL and "
         "PS_HEARTBEAT_TIMEOUT the same on every node";
}

}  // namespace

Settings shared_settings(const JobConfig& c, const std::string& van, size_t van_message_limit) {
  // BYTEPS_LOCAL_SIZE belongs to the local layer, which has checked it on
  // a worker; as text here, since only equality matters.
  std::string local_size = env::get("BYTEPS_LOCAL_SIZE").value_or("1");
  return {
      {"DMLC_NUM_WORKER", std::to_string(c.num_workers)},
      {"DMLC_NUM_SERVER", std::to_string(c.num_servers)},
      {"PS_HEARTBEAT_INTERVAL", std::to_string(c.heartbeat_interval_s)},
      {"PS_HEARTBEAT_TIMEOUT", std::to_string(c.heartbeat_timeout_s)},
      {"BYTEPS_ENABLE_ASYNC", c.enable_async ? "1" : "0"},
      {"van", van},
      {"van message limit", van_message_limit == 0 || van_message_limit == SIZE_MAX
                                ? "unlimited"
                                : std::to_string(van_message_limit)},
      {"BYTEPS_LOCAL_SIZE", local_size},
      {"BYTEPS_PARTITION_BYTES",
       c.partition_bytes > 0 ? std::to_string(c.partition_bytes) : "unset"},
      {"BYTEPS_MIN_COMPRESS_BYTES", std::to_string(c.min_compress_bytes)},
      {"BYTEPS_ENABLE_MIXED_MODE", c.enable_mixed_mode ? "1" : "0"},
      {"CARAVAN_ELASTIC", c.elastic ? "1" : "0"},
  };
}

void drop_counts(Settings& settings) {
  settings.erase(std::remove_if(settings.begin(), settings.end(),
                                [](const auto& kv) {
                                  return kv.first == "DMLC_NUM_WORKER" ||
                                         kv.first == "DMLC_NUM_SERVER";
                                }),
                 settings.end());
}

std::string settings_conflict(const JobConfig& sched, const NodeInfo& n,
                              const std::vector<const NodeInfo*>& others) {
  for (auto [var, want] : {std::pair<const char*, int>{"DMLC_NUM_WORKER", sched.num_workers},
                           {"DMLC_NUM_SERVER", sched.num_servers}}) {
    const std::string* have = find(n.settings, var);
    if (have && *have != std::to_string(want))
      return n.describe() + " has " + var + "=" + *have + " but the scheduler has " + var + "=" +
             std::to_string(want) + ": set it the same on every node";
  }
  // A worker must know whether a lost peer ends the job or regroups it.
  const std::string* elastic = find(n.settings, "CARAVAN_ELASTIC");
  if (elastic && *elastic != (sched.elastic ? "1" : "0"))
    return n.describe() + " has CARAVAN_ELASTIC=" + *elastic +
           " but the scheduler has CARAVAN_ELASTIC=" + (sched.elastic ? "1" : "0") +
           ": set it the same on every node";
  if (std::string why = heartbeat_conflict(sched, n); !why.empty()) return why;
  if (n.role == Role::kScheduler) return "";
  for (const Shared& s : kShared) {
    if (!s.servers && n.role != Role::kWorker) continue;
    const std::string* mine = find(n.settings, s.name);
    if (!mine) continue;
    for (const NodeInfo* o : others) {
      if (!s.servers && o->role != Role::kWorker) continue;
      const std::string* theirs = find(o->settings, s.name);
      if (!theirs || *theirs == *mine) continue;
      return o->describe() + " has " + shown(s.name, *theirs) + " but " + n.describe() + " has " +
             shown(s.name, *mine) + ": set " + remedy(s.name, n) + " the same on every " +
             (s.servers ? "server and worker" : "worker");
    }
  }
  return "";
}

}  // namespace caravan
