// The plugin loader's search and refusals, and the host services table.
#include "engine/plugin/loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/error.h"
#include "engine/plugin/host_services.h"
#include "tests/unit/env_guard.h"

namespace caravan {
namespace {

const std::string kTestPlugins = CARAVAN_TEST_PLUGIN_DIR;

// The error load_plugin throws; fails the test when it loads.
Error load_failure(caravan_plugin_kind kind, uint32_t major, const std::string& choice,
                   const std::string& source, const std::string& plugin_path) {
  try {
    load_plugin(kind, major, choice, source, plugin_path);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "loaded " << choice;
  return Error(0, "");
}

std::string van_file(const std::string& name) { return "libcaravan-van-" + name + ".so"; }

std::string canonical(const std::string& p) {
  return std::filesystem::weakly_canonical(p).string();
}

TEST(PluginLoader, SearchDirsInOrder) {
  auto dirs = plugin_search_dirs("/first:/second::/third:");
  ASSERT_EQ(dirs.size(), 5u);
  EXPECT_EQ(dirs[0], "/first");
  EXPECT_EQ(dirs[1], "/second");
  EXPECT_EQ(dirs[2], "/third");
  // The folder beside libcaravan.so (however the loader spelt its path).
  EXPECT_EQ(canonical(dirs[3]), canonical(std::string(CARAVAN_TEST_ENGINE_DIR) + "/caravan"));
  EXPECT_EQ(dirs[4], CARAVAN_TEST_INSTALL_PLUGIN_DIR);

  auto plain = plugin_search_dirs("");
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0], dirs[3]);
  EXPECT_EQ(plain[1], dirs[4]);
}

TEST(PluginLoader, UnknownNameListsEveryPathTried) {
  const std::string path = "/nonexistent/one:/nonexistent/two";
  Error e = load_failure(CARAVAN_PLUGIN_KIND_VAN, 1, "acme", "DMLC_ENABLE_RDMA=acme", path);
  std::string what = e.what();
  EXPECT_EQ(e.code(), CARAVAN_ERR_PLUGIN);
  EXPECT_NE(what.find("van plugin 'acme'"), std::string::npos) << what;
  EXPECT_NE(what.find("DMLC_ENABLE_RDMA=acme"), std::string::npos) << what;
  size_t last = 0;
  for (const std::string& dir : plugin_search_dirs(path)) {
    std::string line = dir + "/" + van_file("acme") + ": not found";
    size_t at = what.find(line);
    EXPECT_NE(at, std::string::npos) << "missing '" << line << "' in:\n" << what;
    if (at != std::string::npos) {
      EXPECT_GE(at, last) << line << " is out of order";
      last = at;
    }
  }
}

TEST(PluginLoader, ReducerNamesMapToReducerFiles) {
  std::string what =
      load_failure(CARAVAN_PLUGIN_KIND_REDUCER, 1, "acme", "CARAVAN_REDUCER=acme", "/nowhere")
          .what();
  EXPECT_NE(what.find("/nowhere/libcaravan-reducer-acme.so: not found"), std::string::npos) << what;
}

TEST(PluginLoader, MissingAbsolutePath) {
  const std::string p = "/nonexistent/libcaravan-van-x.so";
  Error e = load_failure(CARAVAN_PLUGIN_KIND_VAN, 1, p, "CARAVAN_VAN=" + p, kTestPlugins);
  std::string what = e.what();
  EXPECT_EQ(e.code(), CARAVAN_ERR_PLUGIN);
  EXPECT_NE(what.find(p + ": not found"), std::string::npos) << what;
  EXPECT_EQ(what.find(kTestPlugins), std::string::npos) << "an absolute path is not searched";
}

struct Refusal {
  const char* name;
  const char* reason;
};

TEST(PluginLoader, RefusesBrokenPlugins) {
  const Refusal cases[] = {
      {"abi99", "ABI 99"},
      {"wrongkind", "is a reducer plugin, not a van plugin"},
      {"noentry", "no symbol caravan_plugin_entry"},
      {"badmagic", "bad magic 0xdeadbeef"},
  };
  for (const Refusal& r : cases) {
    SCOPED_TRACE(r.name);
    const std::string file = kTestPlugins + "/" + van_file(r.name);
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    // By name through the search path, and by absolute path.
    for (const std::string& choice : {std::string(r.name), file}) {
      Error e =
          load_failure(CARAVAN_PLUGIN_KIND_VAN, 1, choice, "CARAVAN_VAN=" + choice, kTestPlugins);
      std::string what = e.what();
      EXPECT_EQ(e.code(), CARAVAN_ERR_PLUGIN);
      EXPECT_NE(what.find(file + ": "), std::string::npos) << what;
      EXPECT_NE(what.find(r.reason), std::string::npos) << what;
    }
  }
}

TEST(PluginLoader, KindIsCheckedBeforeAbi) {
  // The wrong-kind plugin speaks ABI 1; asking for major 2 still names the kind.
  std::string what =
      load_failure(CARAVAN_PLUGIN_KIND_VAN, 2, "wrongkind", "test", kTestPlugins).what();
  EXPECT_NE(what.find("is a reducer plugin"), std::string::npos) << what;
}

#ifdef CARAVAN_TEST_ZMQ_DIR
TEST(PluginLoader, LoadsTheZmqVanByName) {
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_VAN, 1, 2, "zmq", "the default", CARAVAN_TEST_ZMQ_DIR);
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->path, std::string(CARAVAN_TEST_ZMQ_DIR) + "/" + van_file("zmq"));
  ASSERT_NE(lib->handle, nullptr);
  ASSERT_NE(lib->descriptor, nullptr);
  EXPECT_EQ(lib->descriptor->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(lib->descriptor->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_VAN));
  EXPECT_EQ(lib->descriptor->abi_major, 2u);
  EXPECT_STREQ(lib->descriptor->name, "zmq");
  EXPECT_NE(lib->descriptor->ops, nullptr);
}

TEST(PluginLoader, SkipsRefusedCandidatesAndLoadsALaterOne) {
  // A broken file earlier in the path does not hide a good one later.
  const std::string broken =
      ::testing::TempDir() + "caravan-loader-test-" + std::to_string(::getpid());
  std::filesystem::create_directories(broken);
  std::filesystem::copy_file(kTestPlugins + "/" + van_file("badmagic"),
                             broken + "/" + van_file("zmq"),
                             std::filesystem::copy_options::overwrite_existing);
  auto lib = load_plugin(CARAVAN_PLUGIN_KIND_VAN, 1, 2, "zmq", "test",
                         broken + ":" + CARAVAN_TEST_ZMQ_DIR);
  EXPECT_EQ(lib->path, std::string(CARAVAN_TEST_ZMQ_DIR) + "/" + van_file("zmq"));
  std::filesystem::remove_all(broken);
}

TEST(PluginLoader, ZmqIsNotAReducer) {
  std::string what =
      load_failure(CARAVAN_PLUGIN_KIND_REDUCER, 1,
                   std::string(CARAVAN_TEST_ZMQ_DIR) + "/" + van_file("zmq"), "test", "")
          .what();
  EXPECT_NE(what.find("is a van plugin, not a reducer plugin"), std::string::npos) << what;
}
#endif

TEST(HostServices, ParamVariable) {
  HostServices cpu(CARAVAN_PLUGIN_KIND_REDUCER, "cpu");
  EXPECT_EQ(cpu.param_variable("THREADS"), "CARAVAN_REDUCER_CPU_THREADS");
  HostServices efa(CARAVAN_PLUGIN_KIND_VAN, "efa-x");
  EXPECT_EQ(efa.param_variable("max-inflight"), "CARAVAN_VAN_EFA_X_MAX_INFLIGHT");
}

TEST(HostServices, TableReadsParametersAndEnvironment) {
  test::EnvGuard env;
  env.set("CARAVAN_REDUCER_CPU_THREADS", "6").unset("CARAVAN_REDUCER_CPU_CHUNK");
  env.set("CARAVAN_LOADER_TEST_VAR", "x").set("CARAVAN_LOADER_TEST_EMPTY", "");
  HostServices host(CARAVAN_PLUGIN_KIND_REDUCER, "cpu");
  const caravan_host_v1* t = host.table();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->struct_size, sizeof(caravan_host_v1));
  EXPECT_EQ(t->host_ctx, &host);
  ASSERT_NE(t->get_param, nullptr);
  ASSERT_NE(t->get_env, nullptr);
  EXPECT_STREQ(t->get_param(t->host_ctx, "THREADS"), "6");
  EXPECT_EQ(t->get_param(t->host_ctx, "CHUNK"), nullptr);
  EXPECT_EQ(t->get_param(t->host_ctx, nullptr), nullptr);
  EXPECT_STREQ(t->get_env(t->host_ctx, "CARAVAN_LOADER_TEST_VAR"), "x");
  EXPECT_EQ(t->get_env(t->host_ctx, "CARAVAN_LOADER_TEST_EMPTY"), nullptr);
  EXPECT_EQ(t->get_env(t->host_ctx, nullptr), nullptr);
  t->log(t->host_ctx, CARAVAN_LOG_TRACE, "a trace line from the test");
  t->log(t->host_ctx, CARAVAN_LOG_INFO, nullptr);
}

TEST(HostServices, ErrorsArePerThread) {
  HostServices host(CARAVAN_PLUGIN_KIND_VAN, "zmq");
  const caravan_host_v1* t = host.table();
  HostServices::take_error();  // start clean
  t->set_error(t->host_ctx, "peer went away");
  std::string other = "unset";
  std::thread([&] {
    other = HostServices::take_error();
    t->set_error(t->host_ctx, "from the other thread");
  }).join();
  EXPECT_EQ(other, "") << "another thread saw this thread's error";
  EXPECT_EQ(HostServices::take_error(), "peer went away");
  EXPECT_EQ(HostServices::take_error(), "") << "take_error clears";

  t->set_error(t->host_ctx, "no route to host");
  EXPECT_EQ(describe_plugin_failure(CARAVAN_STATUS_IO), "I/O error: no route to host");
  EXPECT_EQ(describe_plugin_failure(CARAVAN_STATUS_TIMEOUT), "timeout");
  t->set_error(t->host_ctx, nullptr);
  EXPECT_EQ(HostServices::take_error(), "");
}

}  // namespace
}  // namespace caravan
