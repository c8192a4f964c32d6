// The van under test: found by name or path the way the engine finds it,
// opened with dlopen, and its descriptor checked before any test runs.
#pragma once

#include <string>
#include <vector>

#include "caravan/plugin/van_v1.h"

namespace caravan::van_check {

struct VanPlugin {
  std::string path;
  void* handle = nullptr;
  caravan_plugin_entry_fn entry = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
  const caravan_van_ops_v1* ops = nullptr;
};

// Where a bare name is looked for: CARAVAN_PLUGIN_PATH, then the plugin
// folder of the install or build tree this program lives in.
std::vector<std::string> plugin_search_dirs();

// Opens `choice` (a name such as "zmq", or an absolute path). Returns false
// with `why` naming every path tried and the reason each was refused.
bool open_van(const std::string& choice, VanPlugin* out, std::string* why);

// The plugin every test runs against; set once by main().
const VanPlugin& van();
void set_van(VanPlugin plugin);

// Programs for the whole-job test; empty when not given.
struct JobPrograms {
  std::string launcher;
  std::string worker;
};
const JobPrograms& job_programs();
void set_job_programs(JobPrograms programs);

}  // namespace caravan::van_check
