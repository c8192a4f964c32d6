// What the environment asks of a worker's CPU binding (BYTEPS_NUMA_ON,
// BYTEPS_NUMA_DEFAULT_QUOTA, BYTEPS_CPU_BLACKLIST, BYTEPS_VISIBLE_CPU_CORES,
// BYTEPS_MULTITHREADED_CPU), parsed and checked before any topology is
// looked at, so a typo is reported the same way on every machine.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace caravan {

// CPU numbers as the OS counts them (what taskset and /proc show), ascending
// and without repeats.
using CpuList = std::vector<unsigned>;

struct CpuSettings {
  bool numa_on = true;       // BYTEPS_NUMA_ON
  std::optional<int> quota;  // BYTEPS_NUMA_DEFAULT_QUOTA, physical cores per worker
  CpuList blacklist;         // BYTEPS_CPU_BLACKLIST
  std::string blacklist_text;
  // BYTEPS_VISIBLE_CPU_CORES: one list per local rank.
  std::optional<std::vector<CpuList>> visible;
  std::string visible_text;
  bool multithreaded = true;  // BYTEPS_MULTITHREADED_CPU
  int local_rank = 0;         // BYTEPS_LOCAL_RANK
  int local_size = 1;         // BYTEPS_LOCAL_SIZE
  // CUDA_VISIBLE_DEVICES, to tell which GPU a local rank drives.
  std::optional<std::string> cuda_visible_devices;

  // Throws a CARAVAN_ERR_CONFIG error naming the variable and value at fault.
  static CpuSettings from_env();
};

// Parses `text`, a list such as "1,4-5,7-11", found in variable `var`
// whose whole value is `whole` (they differ for one section of
// BYTEPS_VISIBLE_CPU_CORES). Throws a config error naming both.
CpuList parse_cpu_list(const char* var, const std::string& whole, const std::string& text);

// A number written only in decimal digits ("", "-1", "0x3", " 4" are not),
// small enough for a CPU or device index; nullopt otherwise.
std::optional<unsigned> parse_index(const std::string& text);

// "0-3,8,10-11": the short form of a list, for messages and logs.
std::string format_cpu_list(const CpuList& cpus);

}  // namespace caravan
