// JobConfig::from_env: every variable it reads, what it accepts and how it
// reports what it refuses.
#include "engine/base/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "tests/unit/env_guard.h"

namespace caravan {
namespace {

const char* const kAllVariables[] = {"DMLC_ROLE",
                                     "DMLC_PS_ROOT_URI",
                                     "DMLC_PS_ROOT_PORT",
                                     "DMLC_NUM_WORKER",
                                     "DMLC_NUM_SERVER",
                                     "DMLC_WORKER_ID",
                                     "CARAVAN_SERVER_ID",
                                     "DMLC_INTERFACE",
                                     "DMLC_NODE_HOST",
                                     "DMLC_PORT",
                                     "DMLC_ENABLE_RDMA",
                                     "CARAVAN_VAN",
                                     "CARAVAN_REDUCER",
                                     "CARAVAN_PLUGIN_PATH",
                                     "BYTEPS_PARTITION_BYTES",
                                     "CARAVAN_CONNECT_TIMEOUT",
                                     "CARAVAN_OP_TIMEOUT",
                                     "BYTEPS_ENABLE_IPC"};

// Starts every test from a clean, valid worker environment.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kAllVariables) env_.unset(v);
    env_.set("DMLC_ROLE", "worker")
        .set("DMLC_PS_ROOT_URI", "10.0.0.1")
        .set("DMLC_PS_ROOT_PORT", "9000")
        .set("DMLC_NUM_WORKER", "2")
        .set("DMLC_NUM_SERVER", "3");
  }

  // The config error from_env throws; fails the test when none is thrown.
  Error config_failure(std::optional<Role> role = std::nullopt) {
    try {
      JobConfig::from_env(role);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "from_env accepted the environment";
    return Error(0, "");
  }

  // from_env must refuse `var`=`value` (with DMLC_ROLE=`role` unless null)
  // with a config error that names the variable and quotes the value.
  void expect_value_refused(const char* var, const char* value, const char* role = nullptr) {
    SCOPED_TRACE(std::string(var) + "=" + value);
    test::EnvGuard local;
    if (role) local.set("DMLC_ROLE", role);
    local.set(var, value);
    Error e = config_failure();
    std::string what = e.what();
    EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
    EXPECT_NE(what.find(var), std::string::npos) << what;
    EXPECT_NE(what.find(std::string("'") + value + "'"), std::string::npos) << what;
  }

  test::EnvGuard env_;
};

// A field of the config as text, so that fields of every type fit one table.
template <typename T>
std::string text(const T& v) {
  std::ostringstream out;
  out << std::boolalpha << v;
  return out.str();
}
std::string text(const std::optional<int>& v) { return v ? std::to_string(*v) : "unset"; }

#define FIELD(name) [](const JobConfig& c) { return text(c.name); }

// Each variable the base environment leaves unset: a value for it, and the
// field it fills, with that value and by default.
struct Optional {
  const char* var;
  const char* value;
  std::string (*field)(const JobConfig&);
  const char* when_set;
  const char* by_default;
};

const Optional kOptional[] = {
    {"DMLC_WORKER_ID", "1", FIELD(preferred_rank), "1", "unset"},
    {"DMLC_INTERFACE", "eth1", FIELD(interface), "eth1", ""},
    {"DMLC_NODE_HOST", "10.0.0.7", FIELD(node_host), "10.0.0.7", ""},
    {"DMLC_PORT", "4321", FIELD(port), "4321", "0"},
    {"CARAVAN_REDUCER", "cuda", FIELD(reducer), "cuda", "cpu"},
    {"CARAVAN_PLUGIN_PATH", "/opt/a:/opt/b", FIELD(plugin_path), "/opt/a:/opt/b", ""},
    // Unset: the job's shape chooses (partition_plan.h).
    {"BYTEPS_PARTITION_BYTES", "1024000", FIELD(partition_bytes), "1024000", "0"},
    {"CARAVAN_CONNECT_TIMEOUT", "5", FIELD(connect_timeout_s), "5", "60"},
    {"CARAVAN_OP_TIMEOUT", "30", FIELD(op_timeout_s), "30", "600"},
    {"BYTEPS_ENABLE_IPC", "1", FIELD(enable_ipc), "true", "false"},
};

TEST_F(ConfigTest, ReadsEveryVariable) {
  for (const Optional& o : kOptional) env_.set(o.var, o.value);
  JobConfig c = JobConfig::from_env();
  EXPECT_EQ(c.role, Role::kWorker);
  EXPECT_EQ(c.root_uri, "10.0.0.1");
  EXPECT_EQ(c.root_port, 9000);
  EXPECT_EQ(c.num_workers, 2);
  EXPECT_EQ(c.num_servers, 3);
  EXPECT_EQ(c.van, "zmq");
  for (const Optional& o : kOptional) EXPECT_EQ(o.field(c), o.when_set) << o.var << "=" << o.value;
}

TEST_F(ConfigTest, Defaults) {
  JobConfig c = JobConfig::from_env();
  EXPECT_EQ(c.van, "zmq");
  for (const Optional& o : kOptional) EXPECT_EQ(o.field(c), o.by_default) << o.var << " unset";
}

TEST_F(ConfigTest, Roles) {
  env_.set("DMLC_ROLE", "scheduler");
  EXPECT_EQ(JobConfig::from_env().role, Role::kScheduler);
  env_.set("DMLC_ROLE", "server").set("CARAVAN_SERVER_ID", "2");
  JobConfig s = JobConfig::from_env();
  EXPECT_EQ(s.role, Role::kServer);
  EXPECT_EQ(s.preferred_rank, 2);
  // A forced role does not read DMLC_ROLE at all, not even a bad one.
  env_.set("DMLC_ROLE", "boss");
  EXPECT_EQ(JobConfig::from_env(Role::kWorker).role, Role::kWorker);
  env_.unset("DMLC_ROLE");
  EXPECT_EQ(JobConfig::from_env(Role::kScheduler).role, Role::kScheduler);
  EXPECT_STREQ(role_name(Role::kScheduler), "scheduler");
  EXPECT_STREQ(role_name(Role::kServer), "server");
  EXPECT_STREQ(role_name(Role::kWorker), "worker");
}

TEST_F(ConfigTest, RankOfTheOtherRoleIsIgnored) {
  // DMLC_WORKER_ID belongs to workers, CARAVAN_SERVER_ID to servers.
  env_.set("DMLC_ROLE", "server").set("DMLC_WORKER_ID", "99");
  EXPECT_FALSE(JobConfig::from_env().preferred_rank.has_value());
  env_.set("DMLC_ROLE", "worker").unset("DMLC_WORKER_ID").set("CARAVAN_SERVER_ID", "99");
  EXPECT_FALSE(JobConfig::from_env().preferred_rank.has_value());
}

TEST_F(ConfigTest, MissingRequiredVariableIsNamed) {
  for (const char* var : {"DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_WORKER",
                          "DMLC_NUM_SERVER"}) {
    for (bool empty : {false, true}) {
      SCOPED_TRACE(std::string(var) + (empty ? " empty" : " unset"));
      test::EnvGuard local;
      if (empty)
        local.set(var, "");
      else
        local.unset(var);
      Error e = config_failure();
      EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
      EXPECT_NE(std::string(e.what()).find(var), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not set"), std::string::npos) << e.what();
    }
  }
}

struct Malformed {
  const char* var;
  const char* value;
  const char* role;  // DMLC_ROLE for the case
};

TEST_F(ConfigTest, MalformedValueIsNamedWithItsValue) {
  const Malformed cases[] = {
      {"DMLC_NUM_WORKER", "abc", "worker"},
      {"DMLC_NUM_WORKER", "0", "worker"},
      {"DMLC_NUM_WORKER", "2x", "worker"},
      {"DMLC_NUM_SERVER", "-3", "worker"},
      {"DMLC_PS_ROOT_PORT", "70000", "worker"},
      {"DMLC_PS_ROOT_PORT", "0", "worker"},
      {"DMLC_PS_ROOT_PORT", "99999999999999999999999", "worker"},
      {"DMLC_WORKER_ID", "5", "worker"},  // 2 workers: ranks 0..1
      {"DMLC_WORKER_ID", "2", "worker"},
      {"DMLC_WORKER_ID", "-1", "worker"},
      {"CARAVAN_SERVER_ID", "3", "server"},  // 3 servers: ranks 0..2
      {"DMLC_ROLE", "boss", nullptr},
      {"DMLC_ROLE", "Worker", nullptr},
      {"BYTEPS_PARTITION_BYTES", "-1", "worker"},
      {"BYTEPS_PARTITION_BYTES", "0", "worker"},
      {"BYTEPS_PARTITION_BYTES", "4M", "worker"},
      {"DMLC_PORT", "x", "worker"},
      {"DMLC_PORT", "65536", "worker"},
      {"CARAVAN_CONNECT_TIMEOUT", "1.5", "worker"},
      {"CARAVAN_OP_TIMEOUT", "0", "worker"},
      {"CARAVAN_REDUCER", "lib/cpu.so", "worker"},
      {"CARAVAN_REDUCER", "a b", "worker"},
      {"BYTEPS_ENABLE_IPC", "yes", "server"},
  };
  for (const Malformed& m : cases) expect_value_refused(m.var, m.value, m.role);
}

TEST_F(ConfigTest, RangeIsStatedForIntegers) {
  env_.set("DMLC_WORKER_ID", "5");
  std::string what = config_failure().what();
  EXPECT_NE(what.find("0..1"), std::string::npos) << what;
}

struct VanCase {
  const char* rdma;  // nullptr: unset
  const char* van;
  const char* source;
};

TEST_F(ConfigTest, VanFromDmlcEnableRdma) {
  const VanCase cases[] = {
      {nullptr, "zmq", "the default"},
      {"", "zmq", "the default"},
      {"0", "zmq", "DMLC_ENABLE_RDMA=0"},
      {"zmq", "zmq", "DMLC_ENABLE_RDMA=zmq"},
      {"1", "verbs", "DMLC_ENABLE_RDMA=1"},
      {"ibverbs", "verbs", "DMLC_ENABLE_RDMA=ibverbs"},
      {"fabric", "efa", "DMLC_ENABLE_RDMA=fabric"},
      {"acme", "acme", "DMLC_ENABLE_RDMA=acme"},
      {"/opt/vans/libacme.so", "/opt/vans/libacme.so", "DMLC_ENABLE_RDMA=/opt/vans/libacme.so"},
  };
  for (const VanCase& v : cases) {
    SCOPED_TRACE(v.rdma ? v.rdma : "(unset)");
    test::EnvGuard local;
    if (v.rdma)
      local.set("DMLC_ENABLE_RDMA", v.rdma);
    else
      local.unset("DMLC_ENABLE_RDMA");
    JobConfig c = JobConfig::from_env();
    EXPECT_EQ(c.van, v.van);
    EXPECT_EQ(c.van_source, v.source);
  }
}

TEST_F(ConfigTest, CaravanVanOverrides) {
  env_.set("DMLC_ENABLE_RDMA", "1").set("CARAVAN_VAN", "tcp");
  JobConfig c = JobConfig::from_env();
  EXPECT_EQ(c.van, "tcp");
  EXPECT_EQ(c.van_source, "CARAVAN_VAN=tcp");

  env_.set("CARAVAN_VAN", "/opt/vans/libcaravan-van-x.so");
  c = JobConfig::from_env();
  EXPECT_EQ(c.van, "/opt/vans/libcaravan-van-x.so");
  EXPECT_EQ(c.van_source, "CARAVAN_VAN=/opt/vans/libcaravan-van-x.so");

  // resolve_van alone, for callers that build a config by hand.
  JobConfig bare;
  resolve_van(bare);
  EXPECT_EQ(bare.van, "/opt/vans/libcaravan-van-x.so");
}

TEST_F(ConfigTest, BadVanChoiceIsNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"CARAVAN_VAN", "vans/libx.so"}, {"CARAVAN_VAN", "a b"},      {"CARAVAN_VAN", "./x"},
      {"CARAVAN_VAN", "x;rm"},         {"DMLC_ENABLE_RDMA", "a b"}, {"DMLC_ENABLE_RDMA", "../x.so"},
  };
  for (auto& [var, value] : cases) expect_value_refused(var, value);
}

TEST_F(ConfigTest, ReducerChoice) {
  EXPECT_EQ(JobConfig::from_env().reducer, "cpu");
  env_.set("CARAVAN_REDUCER", "cuda_v2");
  EXPECT_EQ(JobConfig::from_env().reducer, "cuda_v2");
  env_.set("CARAVAN_REDUCER", "/opt/r/libcaravan-reducer-x.so");
  EXPECT_EQ(JobConfig::from_env().reducer, "/opt/r/libcaravan-reducer-x.so");
}

// A timeline folder that cannot hold the file stops the node at start-up:
// it used to be found out only when the trace was written, after the run.
TEST_F(ConfigTest, UnwritableTraceDirIsRefusedAtStartUp) {
  test::EnvGuard local;
  local.set("BYTEPS_TRACE_ON", "1");
  for (const char* dir : {"/proc/no-such-folder", "/dev/null/trace"}) {
    local.set("BYTEPS_TRACE_DIR", dir);
    Error e = config_failure();
    EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
    EXPECT_NE(std::string(e.what()).find(std::string("BYTEPS_TRACE_DIR='") + dir + "'"),
              std::string::npos)
        << e.what();
  }
  std::string fresh = ::testing::TempDir() + "caravan-trace-" + std::to_string(getpid());
  local.set("BYTEPS_TRACE_DIR", fresh.c_str());
  EXPECT_EQ(JobConfig::from_env().trace_dir, fresh);
  EXPECT_TRUE(std::filesystem::is_directory(fresh)) << "created, so the node can write there";
  std::filesystem::remove_all(fresh);
  // Off, the folder is nobody's business.
  local.set("BYTEPS_TRACE_ON", "0").set("BYTEPS_TRACE_DIR", "/proc/no-such-folder");
  EXPECT_NO_THROW(JobConfig::from_env());
}

}  // namespace
}  // namespace caravan
