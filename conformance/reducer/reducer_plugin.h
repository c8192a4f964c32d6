// Loads reducer plugins the way the engine does (dlopen, the entry symbol,
// the descriptor checks) and runs instances against the kits' fake host,
// whose parameters come from a map.
#ifndef CARAVAN_TESTS_REDUCER_CONFORMANCE_REDUCER_PLUGIN_H
#define CARAVAN_TESTS_REDUCER_CONFORMANCE_REDUCER_PLUGIN_H

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_v1.h"
#include "conformance/host/fake_host.h"

namespace caravan::conformance {

struct LoadedPlugin {
  std::string path;
  void* handle = nullptr;
  const caravan_plugin_descriptor* descriptor = nullptr;
  const caravan_reducer_ops_v1* ops = nullptr;
  std::string error;  // why it did not load; empty when it did
};

// Loaded once per path and never unloaded, as the engine keeps its plugins.
const LoadedPlugin& load_plugin(const std::string& path);

// One way to instantiate a plugin: the CPU reducer once per kernel family,
// every other plugin once with its defaults.
struct Variant {
  std::string path;
  std::string plugin;  // from the file name, which the descriptor must match
  std::string label;   // e.g. "cpu_avx2"
  std::map<std::string, std::string> params;
};

// gtest would otherwise print the parameter byte by byte.
inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.label; }

// Every reducer plugin this build made, as CMake listed them.
std::vector<Variant> all_variants();

// An instance of a reducer; `status` is what init returned.
struct Instance {
  Instance(const caravan_reducer_ops_v1& ops, std::map<std::string, std::string> params);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const caravan_reducer_ops_v1& ops;
  FakeHost host;
  void* ctx = nullptr;
  caravan_status status;
};

}  // namespace caravan::conformance

#endif  // CARAVAN_TESTS_REDUCER_CONFORMANCE_REDUCER_PLUGIN_H
