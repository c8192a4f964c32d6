#include "engine/worker/partition_plan.h"

#include <algorithm>
#include <utility>

namespace caravan {

uint64_t name_hash(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // splitmix64 finaliser: FNV alone leaves low bits poorly mixed.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

namespace {

// The server of partition i when servers hold uneven shares: partition i
// sits at u = frac(u0 + i / golden ratio) on [0, 1), cut into one interval
// a server, as long as its share. Consecutive partitions land far apart
// (on other servers, as the even spread's round robin puts them), and any
// run of them meets each server about in proportion to its share.
int weighted_server(uint64_t h, size_t i, const std::vector<double>& shares) {
  constexpr double kInverseGolden = 0.6180339887498949;
  double u0 = static_cast<double>(h >> 11) * 0x1.0p-53;
  double u = u0 + static_cast<double>(i) * kInverseGolden;
  u -= static_cast<double>(static_cast<uint64_t>(u));
  double end = 0;
  for (size_t s = 0; s < shares.size(); ++s) {
    end += shares[s];
    if (u < end) return static_cast<int>(s);
  }
  return static_cast<int>(shares.size() - 1);  // rounding at the top end
}

}  // namespace

std::vector<Partition> plan_partitions(const std::string& name, size_t total_bytes,
                                       size_t element_bytes, size_t partition_bytes,
                                       int num_servers, const std::vector<double>& shares) {
  size_t elements = total_bytes / element_bytes;
  // A partition holds whole elements, at least one.
  size_t max_elems = std::max<size_t>(1, partition_bytes / element_bytes);
  size_t parts = (elements + max_elems - 1) / max_elems;
  if (parts == 0) parts = 1;
  if (total_bytes >= kSpreadMinBytes && num_servers > 1) {
    size_t m = static_cast<size_t>(num_servers);
    parts = (parts + m - 1) / m * m;
    parts = std::min(parts, elements);
  }
  uint64_t h = name_hash(name);
  int first = static_cast<int>(h % static_cast<uint64_t>(num_servers));
  std::vector<Partition> out;
  out.reserve(parts);
  // Equal shares, the remainder spread one element each over the first ones.
  size_t base = elements / parts, extra = elements % parts, offset = 0;
  for (size_t i = 0; i < parts; ++i) {
    size_t n = base + (i < extra ? 1 : 0);
    Partition p;
    // A tensor cut in several partitions names their count in each key, so
    // workers that cut one name differently (another size) never sum unlike
    // partitions: the first ones, equal in size, summed and answered, and
    // a worker reported success for a sum of half a tensor.
    p.key = name_hash(name + "#" + std::to_string(i) +
                      (parts > 1 ? "/" + std::to_string(parts) : std::string()));
    p.server = shares.empty() ? static_cast<int>((first + i) % static_cast<size_t>(num_servers))
                              : weighted_server(h, i, shares);
    p.offset = offset * element_bytes;
    p.bytes = n * element_bytes;
    offset += n;
    out.push_back(p);
  }
  return out;
}

std::vector<Partition> plan_shards(const std::string& name, size_t total_bytes,
                                   size_t element_bytes, size_t partition_bytes, int num_servers,
                                   const std::vector<double>& shares, int num_shards,
                                   const std::vector<int>& homes) {
  const size_t shard_bytes = total_bytes / static_cast<size_t>(num_shards);
  const std::vector<double> even;
  std::vector<Partition> out;
  for (int r = 0; r < num_shards; ++r) {
    const int home = homes.empty() ? -1 : homes[static_cast<size_t>(r)];
    std::vector<Partition> shard =
        plan_partitions(name + "@shard" + std::to_string(r), shard_bytes, element_bytes,
                        partition_bytes, home >= 0 ? 1 : num_servers, home >= 0 ? even : shares);
    for (Partition& p : shard) {
      if (home >= 0) p.server = home;
      p.offset += static_cast<size_t>(r) * shard_bytes;
      p.owner = r;
      out.push_back(p);
    }
  }
  return out;
}

std::vector<Partition> plan_blocks(const std::string& name, size_t total_bytes,
                                   size_t element_bytes, size_t partition_bytes, int num_servers,
                                   const std::vector<double>& shares, int num_blocks, int me,
                                   const std::vector<int>& homes) {
  const size_t block_bytes = total_bytes / static_cast<size_t>(num_blocks);
  const std::vector<double> even;
  std::vector<Partition> out;
  for (int p = 0; p < num_blocks; ++p) {
    if (p == me) continue;
    for (auto [from, to] : {std::pair{me, p}, std::pair{p, me}}) {
      const int home = homes.empty() ? -1 : homes[static_cast<size_t>(to)];
      std::vector<Partition> block = plan_partitions(
          name + "@" + std::to_string(from) + ">" + std::to_string(to), block_bytes, element_bytes,
          partition_bytes, home >= 0 ? 1 : num_servers, home >= 0 ? even : shares);
      for (Partition& part : block) {
        if (home >= 0) part.server = home;
        part.offset += static_cast<size_t>(p) * block_bytes;
        part.owner = from;
        part.target = to;
        out.push_back(part);
      }
    }
  }
  return out;
}

}  // namespace caravan
