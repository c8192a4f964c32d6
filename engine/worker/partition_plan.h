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
  int server = 0;       // server rank
  size_t offset = 0;    // bytes from the tensor's start
  size_t bytes = 0;
};

// Tensors at least this large are cut into a multiple of the server count,
// so every server carries an equal share of each; smaller ones stay whole
// (the per-message cost would dominate) and are placed by name hash.
constexpr size_t kSpreadMinBytes = 64 * 1024;

std::vector<Partition> plan_partitions(const std::string& name, size_t total_bytes,
                                       size_t element_bytes, size_t partition_bytes,
                                       int num_servers);

// 64-bit FNV-1a followed by a finaliser: stable across builds and hosts.
uint64_t name_hash(const std::string& name);

}  // namespace caravan
