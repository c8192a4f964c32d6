// How a tensor is cut into partitions and which server holds each one.
// A pure function of the tensor's name and size and the job's shape, so
// every worker computes the same keys whatever order it declares in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace caravan {

struct Partition {
  uint64_t key = 0;
  int server = 0;     // server rank
  size_t offset = 0;  // bytes from the tensor's start
  size_t bytes = 0;
  // A reduce-scatter's or allgather's: the worker rank whose shard it is
  // in; an all-to-all's: the rank that sends it.
  int owner = -1;
  int target = -1;  // an all-to-all's: the rank it goes to
};

// Tensors at least this large are cut into a multiple of the server count,
// so every server carries an equal share of each; smaller ones stay whole
// (the per-message cost would dominate) and are placed by name hash.
constexpr size_t kSpreadMinBytes = 64 * 1024;

// BYTEPS_PARTITION_BYTES when it is not set. Within one host the cost of
// each message bounds a job, so partitions stay large (BytePS's default).
// Across hosts the links do: a partition's sum can only go back once every
// worker has pushed all of it, so the last partitions' round trips are
// time the links spend half idle, and smaller partitions shorten them.
// On 4+4 hosts with 1 Gbit/s links (bench/cluster/run.sh) 128 KiB took a
// 4 MiB tensor from 0.70x Gloo's ring to 1.2x and a 64 MiB one from 1.15x
// to 1.35x, where on loopback it would make 1-4 MiB tensors 30% slower
// (docs/cluster-bench.md).
constexpr size_t kOneHostPartitionBytes = 4096000;
constexpr size_t kMultiHostPartitionBytes = 128 * 1024;
inline size_t default_partition_bytes(bool job_spans_hosts) {
  return job_spans_hosts ? kMultiHostPartitionBytes : kOneHostPartitionBytes;
}
// A compressed tensor's partitions go on the wire 10 to 100 times smaller,
// so the links' case for small partitions is gone and the per-message
// cost is what is left: they stay large across hosts too (4 MB instead of
// 128 KiB took onebit's ResNet-50 step on 4+4 emulated hosts at 1 Gbit/s
// from 443 to 506 MB/s, docs/compression.md).
constexpr size_t kCompressedPartitionBytes = kOneHostPartitionBytes;

// Partition i's key is name_hash("<name>#<i>"), and "<name>#<i>/<count>"
// when the tensor has several partitions. `shares`: by server rank, the
// share of the bytes each should hold (server_shares.h); empty, even.
std::vector<Partition> plan_partitions(const std::string& name, size_t total_bytes,
                                       size_t element_bytes, size_t partition_bytes,
                                       int num_servers, const std::vector<double>& shares = {});

// A reduce-scatter's or allgather's tensor: `num_shards` equal shards
// (the caller checked that they are whole elements), each cut as
// plan_partitions cuts a tensor named "<name>@shard<r>", each partition's
// owner its shard's rank. Where `homes[r]` is a server rank (a server on
// worker r's host), shard r lies on it whole: then worker r's own shard
// never leaves its host, and the links carry what a ring would. Elsewhere
// (`homes` empty, or -1) the shard spreads over the servers as a tensor.
std::vector<Partition> plan_shards(const std::string& name, size_t total_bytes,
                                   size_t element_bytes, size_t partition_bytes, int num_servers,
                                   const std::vector<double>& shares, int num_shards,
                                   const std::vector<int>& homes);

// An all-to-all's tensor as worker `me` sees it: `num_blocks` equal
// blocks, block b of a worker's tensor bound for worker b. Only the blocks
// `me` sends or gets are planned (none of its own, which never leaves it):
// for each other rank p, the block me -> p (owner me, target p) and the
// block p -> me (owner p, target me), both at block p's offset, of the
// send and the receive buffer. Block s -> t is cut as plan_partitions cuts
// a tensor named "<name>@<s>><t>", so both ends compute its keys. Where
// `homes[t]` is a server rank (a server on t's host), the block lies on
// it whole: it crosses the network once, as a direct send would.
std::vector<Partition> plan_blocks(const std::string& name, size_t total_bytes,
                                   size_t element_bytes, size_t partition_bytes, int num_servers,
                                   const std::vector<double>& shares, int num_blocks, int me,
                                   const std::vector<int>& homes);

// 64-bit FNV-1a followed by a finaliser: stable across builds and hosts.
uint64_t name_hash(const std::string& name);

}  // namespace caravan
