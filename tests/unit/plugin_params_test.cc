// Plugin parameters declared once (plugin_cxx.hpp's Param): reads through a
// declaration, and every in-tree plugin reading only what its descriptor
// lists and listing only what it reads.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/reducer_v1.h"
#include "caravan/plugin/van_v2.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "tests/unit/env_guard.h"

namespace caravan {
namespace {

using plugin::Param;

caravan_status status_thrown(const std::function<void()>& read, std::string* what) {
  try {
    read();
  } catch (const plugin::Error& e) {
    *what = e.what();
    return e.status();
  }
  return CARAVAN_STATUS_OK;
}

TEST(PluginParams, ReadThroughTheirDeclaration) {
  test::EnvGuard env;
  env.set("CARAVAN_REDUCER_PARAMTEST_SET", "7")
      .set("CARAVAN_REDUCER_PARAMTEST_BAD", "7x")
      .unset("CARAVAN_REDUCER_PARAMTEST_UNSET");
  HostServices services(CARAVAN_PLUGIN_KIND_REDUCER, "paramtest");
  plugin::Host host(services.table());
  constexpr Param set{"SET", "3", "set for the job"};
  constexpr Param unset{"UNSET", "3", "left to its default"};
  constexpr Param bad{"BAD", "3", "set to a malformed value"};
  constexpr Param no_default{"UNSET", nullptr, "a default the code works out"};

  EXPECT_EQ(set.integer(host), 7);
  EXPECT_EQ(set.text(host), "7");
  EXPECT_EQ(unset.integer(host), 3);
  EXPECT_EQ(unset.given(host), std::nullopt);
  EXPECT_EQ(no_default.given_integer(host), std::nullopt);
  EXPECT_EQ(set.given_integer(host), 7);

  std::string what;
  EXPECT_EQ(status_thrown([&] { bad.integer(host); }, &what), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(what.find("BAD='7x'"), std::string::npos) << what;
  EXPECT_EQ(status_thrown([&] { no_default.text(host); }, &what), CARAVAN_STATUS_INTERNAL);
  EXPECT_NE(what.find("UNSET has no declared default"), std::string::npos) << what;
}

// The names asked through get_param while the host below is in use.
std::set<std::string> g_asked;
const caravan_host_v1* g_real = nullptr;

const char* recording_get_param(void* ctx, const char* name) {
  g_asked.insert(name ? name : "(NULL)");
  return g_real->get_param(ctx, name);
}

// Loads each in-tree plugin the build made, starts one instance with
// nothing set, and compares the parameters it asked for with its listing.
TEST(PluginParams, EveryPluginReadsWhatItListsAndListsWhatItReads) {
  test::EnvGuard env;
  env.set("FI_PROVIDER", "tcp");  // the efa van on loopback
  std::istringstream paths(CARAVAN_TEST_IN_TREE_PLUGINS);
  std::string path;
  int checked = 0;
  while (std::getline(paths, path, ':')) {
    SCOPED_TRACE(path);
    bool van = path.find("libcaravan-van-") != std::string::npos;
    auto kind = van ? CARAVAN_PLUGIN_KIND_VAN : CARAVAN_PLUGIN_KIND_REDUCER;
    // The in-tree vans speak van ABI 2, the reducers reducer ABI 1.
    auto lib = load_plugin(kind, van ? CARAVAN_VAN_ABI_MAJOR_V2 : CARAVAN_REDUCER_ABI_MAJOR_V1,
                           path, "test", "");
    const caravan_plugin_descriptor* d = lib->descriptor;
    std::set<std::string> listed;
    for (size_t i = 0; i < d->num_params; ++i) listed.insert(d->params[i].name);

    HostServices services(kind, d->name);
    caravan_host_v1 host = *services.table();
    g_real = services.table();
    host.get_param = recording_get_param;
    g_asked.clear();
    void* ctx = nullptr;
    caravan_status s;
    if (van) {
      auto* ops = static_cast<const caravan_van_ops_v2*>(d->ops);
      s = ops->init(&host, &ctx);
      if (s == CARAVAN_STATUS_OK) ops->finalize(ctx);
    } else {
      auto* ops = static_cast<const caravan_reducer_ops_v1*>(d->ops);
      s = ops->init(&host, &ctx);
      if (s == CARAVAN_STATUS_OK) ops->finalize(ctx);
    }
    for (const std::string& name : g_asked)
      EXPECT_EQ(listed.count(name), 1u) << d->name << " reads " << name << " but does not list it";
    // Without its hardware a plugin stops before reading everything.
    if (s == CARAVAN_STATUS_OK) {
      EXPECT_EQ(g_asked, listed) << d->name << " lists parameters it never reads";
      ++checked;
    } else {
      EXPECT_EQ(s, CARAVAN_STATUS_UNAVAILABLE) << d->name << ": " << HostServices::take_error();
    }
  }
  EXPECT_GE(checked, 1) << "no plugin started: nothing was compared";
}

}  // namespace
}  // namespace caravan
