// The scheduler's check that every node of a job shares the settings that
// must agree (engine/control/job_settings.h).
#include "engine/control/job_settings.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace caravan {
namespace {

JobConfig scheduler_config() {
  JobConfig c;
  c.role = Role::kScheduler;
  c.num_workers = 2;
  c.num_servers = 1;
  return c;
}

NodeInfo member(Role role, int pid, JobConfig c = scheduler_config(), std::string van = "zmq",
                size_t van_limit = SIZE_MAX) {
  c.role = role;
  NodeInfo n;
  n.role = role;
  n.pid = pid;
  n.host = "h";
  n.settings = shared_settings(c, van, van_limit);
  return n;
}

void set(NodeInfo& n, const std::string& name, const std::string& value) {
  for (auto& [k, v] : n.settings)
    if (k == name) v = value;
}

TEST(JobSettings, AgreeingNodesJoin) {
  NodeInfo s = member(Role::kServer, 1), w0 = member(Role::kWorker, 2),
           w1 = member(Role::kWorker, 3);
  EXPECT_EQ(settings_conflict(scheduler_config(), s, {}), "");
  EXPECT_EQ(settings_conflict(scheduler_config(), w0, {&s}), "");
  EXPECT_EQ(settings_conflict(scheduler_config(), w1, {&s, &w0}), "");
}

TEST(JobSettings, CountsMustMatchTheSchedulers) {
  JobConfig other = scheduler_config();
  other.num_workers = 3;
  std::string why = settings_conflict(scheduler_config(), member(Role::kWorker, 7, other), {});
  EXPECT_NE(why.find("worker (pid 7"), std::string::npos) << why;
  EXPECT_NE(why.find("DMLC_NUM_WORKER=3 but the scheduler has DMLC_NUM_WORKER=2"),
            std::string::npos)
      << why;
  other = scheduler_config();
  other.num_servers = 4;
  why = settings_conflict(scheduler_config(), member(Role::kServer, 8, other), {});
  EXPECT_NE(why.find("DMLC_NUM_SERVER=4 but the scheduler has DMLC_NUM_SERVER=1"),
            std::string::npos)
      << why;
}

TEST(JobSettings, ServersAndWorkersShareAsyncAndVan) {
  JobConfig async = scheduler_config();
  async.enable_async = true;
  NodeInfo w = member(Role::kWorker, 2);
  std::string why = settings_conflict(scheduler_config(), member(Role::kServer, 5, async), {&w});
  EXPECT_NE(why.find("worker (pid 2 at h) has BYTEPS_ENABLE_ASYNC=0 but server (pid 5 at h) has "
                     "BYTEPS_ENABLE_ASYNC=1"),
            std::string::npos)
      << why;
  why = settings_conflict(scheduler_config(), member(Role::kServer, 6, scheduler_config(), "tcp"),
                          {&w});
  EXPECT_NE(why.find("has the van 'zmq' but server (pid 6 at h) has the van 'tcp'"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("CARAVAN_VAN"), std::string::npos) << why;
}

// A receiver drops what is above its van's limit; the sender checks only
// its own, so every server and worker must have the same one.
TEST(JobSettings, ServersAndWorkersShareTheVanMessageLimit) {
  NodeInfo w = member(Role::kWorker, 2);
  std::string why = settings_conflict(
      scheduler_config(), member(Role::kServer, 5, scheduler_config(), "zmq", 1000), {&w});
  EXPECT_NE(why.find("worker (pid 2 at h) has no van message limit but server (pid 5 at h) has a "
                     "van message limit of 1000 bytes: set CARAVAN_VAN_ZMQ_MAX_MESSAGE_BYTES the "
                     "same on every server and worker"),
            std::string::npos)
      << why;
  NodeInfo limited = member(Role::kWorker, 6, scheduler_config(), "tcp", 1000);
  EXPECT_EQ(
      settings_conflict(scheduler_config(),
                        member(Role::kServer, 7, scheduler_config(), "tcp", 1000), {&limited}),
      "");
  // 0 says "none" as SIZE_MAX does.
  EXPECT_EQ(settings_conflict(scheduler_config(),
                              member(Role::kServer, 8, scheduler_config(), "zmq", 0), {&w}),
            "");
}

TEST(JobSettings, WorkersAloneSharePartitioning) {
  JobConfig parts = scheduler_config();
  parts.partition_bytes = 1000;
  NodeInfo w = member(Role::kWorker, 2), s = member(Role::kServer, 3);
  std::string why =
      settings_conflict(scheduler_config(), member(Role::kWorker, 4, parts), {&s, &w});
  EXPECT_NE(why.find("worker (pid 2 at h) has BYTEPS_PARTITION_BYTES unset but worker (pid 4 at "
                     "h) has BYTEPS_PARTITION_BYTES=1000: set it the same on every worker"),
            std::string::npos)
      << why;
  // A server does not partition: its own value is nobody's business.
  EXPECT_EQ(settings_conflict(scheduler_config(), member(Role::kServer, 5, parts), {&w}), "");
  NodeInfo local = member(Role::kWorker, 6);
  set(local, "BYTEPS_LOCAL_SIZE", "2");
  why = settings_conflict(scheduler_config(), local, {&w});
  EXPECT_NE(why.find("BYTEPS_LOCAL_SIZE=1 but worker (pid 6 at h) has BYTEPS_LOCAL_SIZE=2"),
            std::string::npos)
      << why;
}

TEST(JobSettings, HeartbeatsMustReachBothWays) {
  JobConfig off = scheduler_config();
  off.heartbeat_interval_s = 0;
  std::string why = settings_conflict(scheduler_config(), member(Role::kWorker, 9, off), {});
  EXPECT_NE(why.find("worker (pid 9 at h) has PS_HEARTBEAT_INTERVAL=0 (off) but the scheduler has "
                     "PS_HEARTBEAT_INTERVAL=2 and PS_HEARTBEAT_TIMEOUT=20"),
            std::string::npos)
      << why;
  // Off everywhere, and different intervals within each other's timeouts, are fine.
  EXPECT_EQ(settings_conflict(off, member(Role::kWorker, 9, off), {}), "");
  JobConfig slower = scheduler_config();
  slower.heartbeat_interval_s = 5;
  EXPECT_EQ(settings_conflict(scheduler_config(), member(Role::kWorker, 9, slower), {}), "");
  // The scheduler beats every 30 s, past the node's 20 s timeout.
  JobConfig sched = scheduler_config();
  sched.heartbeat_interval_s = 30;
  sched.heartbeat_timeout_s = 60;
  why = settings_conflict(sched, member(Role::kWorker, 9), {});
  EXPECT_NE(why.find("the scheduler has PS_HEARTBEAT_INTERVAL=30"), std::string::npos) << why;
}

// A worker must know whether a lost peer ends the job or regroups it.
TEST(JobSettings, ElasticityIsTheSchedulers) {
  JobConfig elastic = scheduler_config();
  elastic.elastic = true;
  std::string why = settings_conflict(scheduler_config(), member(Role::kServer, 9, elastic), {});
  EXPECT_NE(why.find("server (pid 9 at h) has CARAVAN_ELASTIC=1 but the scheduler has "
                     "CARAVAN_ELASTIC=0: set it the same on every node"),
            std::string::npos)
      << why;
  EXPECT_EQ(settings_conflict(elastic, member(Role::kWorker, 9, elastic), {}), "");
}

TEST(JobSettings, ANodeWithoutSettingsIsNotChecked) {
  NodeInfo old;  // a REGISTER with no settings (count 0)
  old.role = Role::kWorker;
  NodeInfo w = member(Role::kWorker, 2);
  EXPECT_EQ(settings_conflict(scheduler_config(), old, {&w}), "");
  EXPECT_EQ(settings_conflict(scheduler_config(), w, {&old}), "");
}

}  // namespace
}  // namespace caravan
