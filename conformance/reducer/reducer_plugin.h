// Loads reducer plugins the way the engine does (dlopen, the entry symbol,
// the descriptor checks) and runs instances against the kits' fake host,
// whose parameters come from a map. The library caravan_reducer_test_kit,
// shared by the conformance suite and the reducers' own tests.
#ifndef CARAVAN_TESTS_REDUCER_CONFORMANCE_REDUCER_PLUGIN_H
#define CARAVAN_TESTS_REDUCER_CONFORMANCE_REDUCER_PLUGIN_H

#include <gtest/gtest.h>

#include <optional>
#include <string>

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

// The fixture of a reducer's own tests (TEST_F) on the plugin file at `Path`
// (a constexpr char array, e.g. of CARAVAN_REDUCER_CPU_PATH): each test
// fails at SetUp, saying why, when the file did not load.
template <const char* Path>
class ReducerPluginTest : public testing::Test {
 public:
  static const LoadedPlugin& plugin() { return load_plugin(Path); }
  static const caravan_reducer_ops_v1& ops() { return *plugin().ops; }

 protected:
  void SetUp() override {
    ASSERT_NE(plugin().ops, nullptr) << plugin().path << ": " << plugin().error;
  }
};

// An instance of a reducer; `status` is what init returned. `env`, when
// given, is all the plugin sees of the environment (see FakeHost).
struct Instance {
  Instance(const caravan_reducer_ops_v1& ops, Params params,
           std::optional<Params> env = std::nullopt);
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
