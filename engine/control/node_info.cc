#include "engine/control/node_info.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/wire/bytes.h"

namespace caravan {

std::string NodeInfo::describe() const {
  std::string s = role_name(role);
  if (rank >= 0) s += " " + std::to_string(rank);
  s += " (pid " + std::to_string(pid) + " at " + host;
  if (!van_address.empty()) s += ", " + van_address;
  return s + ")";
}

namespace {
void put_node(wire::Writer& w, const NodeInfo& n) {
  w.i32(n.id);
  w.u8(static_cast<uint8_t>(n.role));
  w.i32(n.rank);
  w.i32(n.preferred_rank);
  w.str(n.host);
  w.str(n.van_address);
  w.i32(n.pid);
}

NodeInfo get_node(wire::Reader& r) {
  NodeInfo n;
  n.id = r.i32();
  uint8_t role = r.u8();
  if (role > static_cast<uint8_t>(Role::kWorker)) throw std::runtime_error("bad role");
  n.role = static_cast<Role>(role);
  n.rank = r.i32();
  n.preferred_rank = r.i32();
  n.host = r.str();
  n.van_address = r.str();
  n.pid = r.i32();
  return n;
}
}  // namespace

std::vector<uint8_t> encode_register(const NodeInfo& n) {
  wire::Writer w;
  put_node(w, n);
  w.u64(n.settings.size());
  for (const auto& [name, value] : n.settings) {
    w.str(name);
    w.str(value);
  }
  return std::move(w.bytes());
}

NodeInfo decode_register(const std::vector<uint8_t>& body) {
  wire::Reader r(body.data(), body.size());
  NodeInfo n = get_node(r);
  // The settings' count is required: a body without it (the form before
  // settings) would parse into one that encodes differently, and builds
  // that sent it speak an older wire format, refused at the header.
  uint64_t count = r.u64();
  if (count > 256) throw std::runtime_error("setting count out of bounds");
  for (uint64_t i = 0; i < count; ++i) {
    std::string name = r.str();
    n.settings.emplace_back(std::move(name), r.str());
  }
  if (!r.done()) throw std::runtime_error("trailing bytes");
  return n;
}

std::vector<uint8_t> encode_node_table(const std::vector<NodeInfo>& nodes) {
  wire::Writer w;
  w.u64(nodes.size());
  for (auto& n : nodes) put_node(w, n);
  return std::move(w.bytes());
}

std::vector<NodeInfo> decode_node_table(const std::vector<uint8_t>& body) {
  wire::Reader r(body.data(), body.size());
  uint64_t count = r.u64();
  if (count > (1u << 21)) throw std::runtime_error("node count out of bounds");
  std::vector<NodeInfo> nodes;
  for (uint64_t i = 0; i < count; ++i) nodes.push_back(get_node(r));
  if (!r.done()) throw std::runtime_error("trailing bytes");
  return nodes;
}

void assign_ranks(std::vector<NodeInfo>& nodes, int num_servers, int num_workers, bool resuming) {
  for (Role role : {Role::kServer, Role::kWorker}) {
    int count = role == Role::kServer ? num_servers : num_workers;
    const char* var = role == Role::kServer ? "CARAVAN_SERVER_ID" : "DMLC_WORKER_ID";
    std::vector<NodeInfo*> group;
    for (auto& n : nodes)
      if (n.role == role) group.push_back(&n);
    std::sort(group.begin(), group.end(), [](const NodeInfo* a, const NodeInfo* b) {
      return std::tie(a->host, a->van_address, a->pid) < std::tie(b->host, b->van_address, b->pid);
    });
    std::map<int, NodeInfo*> taken;
    for (auto* n : group) {
      if (n->preferred_rank < 0) continue;
      if (resuming && (n->preferred_rank >= count || taken.count(n->preferred_rank))) {
        CARAVAN_LOG(WARNING) << "scheduler: " << n->describe() << " asked for rank "
                             << n->preferred_rank << " on resuming, which "
                             << (n->preferred_rank >= count
                                     ? "is out of range 0.." + std::to_string(count - 1)
                                     : "is taken by " + taken[n->preferred_rank]->describe())
                             << "; it gets a free rank";
        n->preferred_rank = -1;
        continue;
      }
      if (n->preferred_rank >= count)
        throw config_error(std::string(var) + "=" + std::to_string(n->preferred_rank) + " of " +
                           n->describe() + " is out of range 0.." + std::to_string(count - 1));
      auto [it, fresh] = taken.emplace(n->preferred_rank, n);
      if (!fresh)
        throw config_error(std::string(var) + "=" + std::to_string(n->preferred_rank) +
                           " is claimed by two nodes: " + it->second->describe() + " and " +
                           n->describe());
    }
    int next = 0;
    for (auto* n : group) {
      if (n->preferred_rank >= 0) {
        n->rank = n->preferred_rank;
      } else {
        while (taken.count(next)) ++next;
        n->rank = next++;
      }
      n->id = role == Role::kServer ? server_id(n->rank) : worker_id(n->rank);
    }
  }
}

}  // namespace caravan
