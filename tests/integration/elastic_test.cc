// Suspend and resume (caravan_suspend, caravan_resume; BytePS's elastic
// API) with real processes: the servers and the scheduler stay up across a
// suspend, take the counts the workers resume with, servers beyond the
// new count leave cleanly, and workers and servers started during the
// suspend join. Every sum is checked by elastic_worker against the
// workers of its phase. And with CARAVAN_ELASTIC=1, nodes killed (or
// stopped) during training: the others regroup and train on, every sum
// checked by regroup_worker against the workers left.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

class ElasticJob {
 public:
  explicit ElasticJob(std::string phases, Env extra = {})
      : port_(free_port()), phases_(std::move(phases)), extra_(std::move(extra)) {
    scheduler = start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {});
  }
  ProcessSpec spec(const std::string& role, const std::string& bin, int workers, int servers,
                   const Env& more) const {
    ProcessSpec s;
    s.argv = {bin};
    s.timeout_s = 120;
    // The scheduler's counts are those of the first phase; later nodes
    // come with their phase's.
    s.set_env = node_env(role, port_, workers ? workers : first(0), servers ? servers : first(1));
    s.set_env.push_back({"CARAVAN_RESUME_TIMEOUT", "60"});
    s.set_env.push_back({"PS_VERBOSE", "1"});  // the INFO lines said when servers leave
    s.set_env.push_back({"BYTEPS_PARTITION_BYTES", "4096"});  // several partitions a tensor
    s.set_env.insert(s.set_env.end(), extra_.begin(), extra_.end());
    s.set_env.insert(s.set_env.end(), more.begin(), more.end());
    return s;
  }
  std::unique_ptr<RunningProcess> start(const std::string& role, const std::string& bin,
                                        int workers, int servers, const Env& more) {
    return std::make_unique<RunningProcess>(spec(role, bin, workers, servers, more));
  }
  std::unique_ptr<RunningProcess> server(int workers, int servers, const Env& more = {}) {
    return start("server", CARAVAN_SERVER_BIN, workers, servers, more);
  }
  std::unique_ptr<RunningProcess> worker(int workers, int servers, int first_phase,
                                         const Env& more = {}) {
    ProcessSpec s = spec("worker", ELASTIC_WORKER_BIN, workers, servers, more);
    s.argv = {ELASTIC_WORKER_BIN, phases_, std::to_string(first_phase)};
    return std::make_unique<RunningProcess>(s);
  }
  // regroup_worker with `args` (STEPS [KILLER STEP [PID]]).
  std::unique_ptr<RunningProcess> regroup_worker(int id, const std::vector<std::string>& args,
                                                 const Env& more = {}) {
    ProcessSpec s = spec("worker", REGROUP_WORKER_BIN, 0, 0, more);
    s.set_env.push_back({"DMLC_WORKER_ID", std::to_string(id)});
    s.argv = {REGROUP_WORKER_BIN};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    return std::make_unique<RunningProcess>(s);
  }
  std::unique_ptr<RunningProcess> scheduler;

 private:
  // The first phase's workers (what 0) or servers (1).
  int first(int what) const {
    int w = 0, s = 0;
    sscanf(phases_.c_str(), "%dx%d", &w, &s);
    return what == 0 ? w : s;
  }
  int port_;
  std::string phases_;
  Env extra_;
};

void expect_clean_exit(RunningProcess& p, const std::string& who, const std::string& says = "") {
  ProcessResult r = p.wait(90);
  EXPECT_EQ(r.exit_code, 0) << who << ":\n" << r.output;
  if (!says.empty()) {
    EXPECT_NE(r.output.find(says), std::string::npos) << who << ":\n" << r.output;
  }
}

// 2 workers and 2 servers; then 1 and 1 (worker 1 leaves, server 1 is not
// needed); then 3 and 2, with two workers and a server started while the
// job is suspended.
TEST(ElasticTest, SuspendShrinksAndGrowsTheJob) {
  ElasticJob job("2x2,1x1,3x2");
  auto server0 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "0"}});
  auto server1 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "1"}});
  auto worker0 = job.worker(2, 2, 0, {{"DMLC_WORKER_ID", "0"}});
  auto worker1 = job.worker(2, 2, 0, {{"DMLC_WORKER_ID", "1"}});
  ASSERT_TRUE(worker0->wait_for_output("suspended after phase 1 as rank 0", 90))
      << worker0->output();
  // Started only now: while the job runs, a node beyond its counts is
  // refused.
  auto server2 = job.server(3, 2);
  auto worker2 = job.worker(3, 2, 2);
  auto worker3 = job.worker(3, 2, 2);
  expect_clean_exit(*worker0, "worker 0", "3 phases checked as rank 0");
  expect_clean_exit(*worker1, "worker 1", "leaving: phase 1 has 1 workers");
  expect_clean_exit(*worker2, "worker 2", "3 phases checked");
  expect_clean_exit(*worker3, "worker 3", "3 phases checked");
  // The scheduler waits for both servers to register again, whichever
  // comes first, and keeps the lower rank.
  expect_clean_exit(*server0, "server 0");
  expect_clean_exit(*server1, "server 1", "leaving: the job resumed with 1 server(s)");
  expect_clean_exit(*server2, "server 2");
  expect_clean_exit(*job.scheduler, "scheduler", "the job resumed with");
}

// Machines of two worker processes (BYTEPS_LOCAL_SIZE=2) suspend and
// resume as machines: machine 1 leaves, then a new machine 1 joins.
TEST(ElasticTest, MachinesOfLocalGroupsLeaveAndJoinWhole) {
  ElasticJob job("2x1,1x1,2x1");
  auto server = job.server(0, 0);
  auto process = [&](int machine, int local_rank, int workers, int first_phase) {
    return job.worker(workers, 1, first_phase,
                      {{"DMLC_WORKER_ID", std::to_string(machine)},
                       {"BYTEPS_LOCAL_SIZE", "2"},
                       {"BYTEPS_LOCAL_RANK", std::to_string(local_rank)}});
  };
  std::vector<std::unique_ptr<RunningProcess>> first, second;
  for (int machine : {0, 1})
    for (int local : {0, 1}) first.push_back(process(machine, local, 2, 0));
  ASSERT_TRUE(first[0]->wait_for_output("suspended after phase 1 as rank 0", 90))
      << first[0]->output();
  for (int local : {0, 1}) second.push_back(process(1, local, 2, 2));
  for (int i = 0; i < 2; ++i) {
    expect_clean_exit(*first[i], "machine 0, local rank " + std::to_string(i),
                      "3 phases checked as rank " + std::to_string(i));
    expect_clean_exit(*first[2 + i], "first machine 1, local rank " + std::to_string(i),
                      "leaving: phase 1 has 1 workers");
    expect_clean_exit(*second[i], "second machine 1, local rank " + std::to_string(i),
                      "3 phases checked as rank " + std::to_string(2 + i));
  }
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler");
}

// A worker new to the job registers while it re-forms and is killed: the
// job re-forms without it, and with the workers started after.
TEST(ElasticTest, ANodeLostWhileTheJobReformsIsLeftOut) {
  ElasticJob job("2x1,4x1");
  auto server = job.server(0, 0);
  auto worker0 = job.worker(2, 1, 0, {{"DMLC_WORKER_ID", "0"}});
  auto worker1 = job.worker(2, 1, 0, {{"DMLC_WORKER_ID", "1"}});
  ASSERT_TRUE(worker0->wait_for_output("suspended after phase 0", 90)) << worker0->output();
  auto doomed = job.worker(4, 1, 1);
  ASSERT_TRUE(doomed->wait_for_output("registered with the scheduler", 90)) << doomed->output();
  doomed->signal(SIGKILL);
  ASSERT_TRUE(job.scheduler->wait_for_output("left while the suspended job re-forms", 90))
      << job.scheduler->output();
  auto worker2 = job.worker(4, 1, 1);
  auto worker3 = job.worker(4, 1, 1);
  int i = 0;
  for (auto* w : {worker0.get(), worker1.get(), worker2.get(), worker3.get()})
    expect_clean_exit(*w, "worker " + std::to_string(i++), "2 phases checked");
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler");
}

// Every worker suspends and none resumes: the servers and the scheduler
// wait CARAVAN_RESUME_TIMEOUT, then end, saying so.
TEST(ElasticTest, ASuspendNobodyResumesEndsAtTheDeadline) {
  ElasticJob job("2x1,2x1", {{"CARAVAN_RESUME_TIMEOUT", "3"}});
  auto server = job.server(0, 0);
  // Worker 1 suspends and leaves (the next phase has 1 worker); worker 0
  // has one phase only and shuts down at the same barrier: none resumes.
  ProcessSpec s = job.spec("worker", ELASTIC_WORKER_BIN, 2, 1, {});
  s.argv = {ELASTIC_WORKER_BIN, "2x1,1x1"};
  s.set_env.push_back({"DMLC_WORKER_ID", "1"});
  RunningProcess leaver(s);
  s.argv = {ELASTIC_WORKER_BIN, "2x1"};  // one phase: this one shuts down at the barrier
  s.set_env.back().second = "0";
  RunningProcess stayer(s);
  ProcessResult l = leaver.wait(90), st = stayer.wait(90);
  // The job was suspended (one worker asked): the other's shutdown left it.
  EXPECT_EQ(l.exit_code, 0) << l.output;
  EXPECT_NE(l.output.find("leaving"), std::string::npos) << l.output;
  EXPECT_EQ(st.exit_code, 0) << st.output;
  ProcessResult sch = job.scheduler->wait(60), srv = server->wait(60);
  EXPECT_EQ(sch.exit_code, 1) << sch.output;
  EXPECT_NE(sch.output.find("not resumed within 3 s (CARAVAN_RESUME_TIMEOUT)"), std::string::npos)
      << sch.output;
  EXPECT_NE(srv.exit_code, 0) << srv.output;
  EXPECT_NE(srv.output.find("not resumed within 3 s"), std::string::npos) << srv.output;
}

// --- CARAVAN_ELASTIC=1: a lost node regroups the job. ---

const Env kElastic = {{"CARAVAN_ELASTIC", "1"}};

void expect_killed(RunningProcess& p, const std::string& who) {
  ProcessResult r = p.wait(90);
  EXPECT_EQ(r.signal, SIGKILL) << who << ":\n" << r.output;
}

// Worker 1 of 3 dies between its two push_pulls of step 5: the others,
// waiting for its second tensor, are told, rejoin as ranks 0 and 1 of 2
// and redo step 5; every sum after it is of the two.
TEST(ElasticTest, ALostWorkerLeavesTheOthersTraining) {
  ElasticJob job("3x1", kElastic);
  auto server = job.server(0, 0);
  std::vector<std::unique_ptr<RunningProcess>> w;
  for (int i = 0; i < 3; ++i) w.push_back(job.regroup_worker(i, {"30", "1", "5"}));
  expect_clean_exit(*w[0], "worker 0", "30 steps checked as rank 0 of 2, regrouped 1 time(s)");
  expect_clean_exit(*w[2], "worker 2", "30 steps checked as rank 1 of 2, regrouped 1 time(s)");
  EXPECT_NE(w[0]->output().find("step 5 abandoned"), std::string::npos) << w[0]->output();
  expect_killed(*w[1], "worker 1");
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler",
                    "the job goes on with the 2 worker(s) and 1 server(s) left");
}

// A server of 2 is killed at step 5 (by worker 0, between its two
// push_pulls): the workers go on with the other, which takes every key.
TEST(ElasticTest, ALostServerLeavesTheWorkersTraining) {
  ElasticJob job("2x2", kElastic);
  auto server0 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "0"}});
  auto server1 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "1"}});
  const std::string victim = std::to_string(server1->pid());
  auto w0 = job.regroup_worker(0, {"30", "0", "5", victim});
  auto w1 = job.regroup_worker(1, {"30", "0", "5", victim});
  expect_clean_exit(*w0, "worker 0", "30 steps checked as rank 0 of 2, regrouped 1 time(s)");
  expect_clean_exit(*w1, "worker 1", "30 steps checked as rank 1 of 2, regrouped 1 time(s)");
  expect_killed(*server1, "server 1");
  expect_clean_exit(*server0, "server 0");
  expect_clean_exit(*job.scheduler, "scheduler",
                    "the job goes on with the 2 worker(s) and 1 server(s) left");
}

// Two machines of two local ranks each (BYTEPS_LOCAL_SIZE=2): a local
// rank of machine 1 is killed (1, then in a second job 0, the one that
// talks to the servers), and machine 1 leaves whole: its other local rank
// fails naming the dead one (local rank 0 first tells the scheduler that
// the machine leaves). Machine 0's two local ranks rejoin together and
// train on as ranks 0 and 1 of 2.
TEST(ElasticTest, AMachineThatLosesALocalRankLeavesWhole) {
  for (int victim : {1, 0}) {
    SCOPED_TRACE("local rank " + std::to_string(victim) + " of machine 1 killed");
    ElasticJob job("2x1", kElastic);
    auto server = job.server(0, 0);
    std::vector<std::unique_ptr<RunningProcess>> w;  // machine * 2 + local rank
    for (int machine : {0, 1})
      for (int local : {0, 1})
        w.push_back(job.regroup_worker(
            machine, {"40"},
            {{"BYTEPS_LOCAL_SIZE", "2"}, {"BYTEPS_LOCAL_RANK", std::to_string(local)}}));
    RunningProcess& dead = *w[2 + victim];
    RunningProcess& other = *w[2 + (1 - victim)];
    ASSERT_TRUE(dead.wait_for_output("step 5 done", 90)) << dead.output();
    dead.signal(SIGKILL);
    expect_clean_exit(*w[0], "machine 0, local rank 0",
                      "40 steps checked as rank 0 of 2, regrouped 1");
    expect_clean_exit(*w[1], "machine 0, local rank 1",
                      "40 steps checked as rank 1 of 2, regrouped 1");
    ProcessResult r = other.wait(90);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    std::string named = "local rank " + std::to_string(victim) + " of machine 1";
    EXPECT_NE(r.output.find(named), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("steps checked"), std::string::npos) << r.output;
    expect_killed(dead, "machine 1, " + named);
    expect_clean_exit(*server, "server");
    expect_clean_exit(*job.scheduler, "scheduler",
                      victim == 1 ? "it left the job: " + named : "lost worker 1");
  }
}

// A server and a worker killed at once (3 workers, 2 servers): whether the
// scheduler sees both in one regroup or the second while the job
// re-forms, worker 0 trains on alone with the server left.
TEST(ElasticTest, AWorkerAndAServerLostTogether) {
  ElasticJob job("3x2", kElastic);
  auto server0 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "0"}});
  auto server1 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "1"}});
  const std::string victim = std::to_string(server1->pid());
  auto w0 = job.regroup_worker(0, {"30"});
  auto w1 = job.regroup_worker(1, {"30", "1", "5", victim});
  auto w2 = job.regroup_worker(2, {"30", "2", "5"});
  expect_clean_exit(*w0, "worker 0", "30 steps checked as rank 0 of 2");
  expect_clean_exit(*w1, "worker 1", "30 steps checked as rank 1 of 2");
  expect_killed(*w2, "worker 2");
  expect_killed(*server1, "server 1");
  expect_clean_exit(*server0, "server 0");
  expect_clean_exit(*job.scheduler, "scheduler");
}

// Below CARAVAN_MIN_WORKERS the job ends as without elasticity, naming
// the lost worker and the bound.
TEST(ElasticTest, FewerWorkersThanTheMinimumEndTheJob) {
  ElasticJob job("2x1", {{"CARAVAN_ELASTIC", "1"}, {"CARAVAN_MIN_WORKERS", "2"}});
  auto server = job.server(0, 0);
  auto w0 = job.regroup_worker(0, {"30"});
  auto w1 = job.regroup_worker(1, {"30", "1", "5"});
  expect_killed(*w1, "worker 1");
  ProcessResult r = w0->wait(90);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("1 worker(s) left, fewer than CARAVAN_MIN_WORKERS=2"), std::string::npos)
      << r.output;
  EXPECT_NE(job.scheduler->wait(60).exit_code, 0);
  EXPECT_NE(server->wait(60).exit_code, 0);
}

// Workers that end on the regroup's error instead of rejoining (as a
// script does that does not catch it) shut down cleanly: caravan_shutdown
// rejoins to leave, so the scheduler does not wait CARAVAN_CONNECT_TIMEOUT
// for them and then end the job.
TEST(ElasticTest, WorkersThatEndAfterARegroupLeaveCleanly) {
  ElasticJob job("3x1", kElastic);
  auto server = job.server(0, 0);
  const Env leave = {{"REGROUP_LEAVE", "1"}};
  std::vector<std::unique_ptr<RunningProcess>> w;
  for (int i = 0; i < 3; ++i) w.push_back(job.regroup_worker(i, {"30", "1", "5"}, leave));
  expect_clean_exit(*w[0], "worker 0", "left after step 5 was abandoned");
  expect_clean_exit(*w[2], "worker 2", "left after step 5 was abandoned");
  expect_killed(*w[1], "worker 1");
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler", "job finished");
  EXPECT_EQ(job.scheduler->output().find("did not register again"), std::string::npos)
      << job.scheduler->output();
}

// A worker stopped (SIGSTOP) past PS_HEARTBEAT_TIMEOUT is lost: the
// others regroup and finish; woken, it is out of the job and says so
// rather than summing with the next generation.
TEST(ElasticTest, AStoppedWorkerIsLeftOutAndCannotComeBack) {
  ElasticJob job(
      "3x1",
      {{"CARAVAN_ELASTIC", "1"}, {"PS_HEARTBEAT_INTERVAL", "1"}, {"PS_HEARTBEAT_TIMEOUT", "3"}});
  auto server = job.server(0, 0);
  std::vector<std::unique_ptr<RunningProcess>> w;
  for (int i = 0; i < 3; ++i) w.push_back(job.regroup_worker(i, {"200"}));
  ASSERT_TRUE(w[1]->wait_for_output("step 3 done", 90)) << w[1]->output();
  w[1]->signal(SIGSTOP);
  expect_clean_exit(*w[0], "worker 0", "200 steps checked as rank 0 of 2, regrouped 1 time(s)");
  expect_clean_exit(*w[2], "worker 2", "200 steps checked as rank 1 of 2, regrouped 1 time(s)");
  w[1]->signal(SIGCONT);
  ProcessResult r = w[1]->wait(90);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // PEER_LOST or TRANSPORT, whichever it notices first; never REGROUPED.
  EXPECT_NE(r.output.find("push_pull failed: -"), std::string::npos) << r.output;
  // At once, from what the scheduler left it: not a lost scheduler waited
  // for over CARAVAN_RESUME_TIMEOUT.
  EXPECT_NE(r.output.find("left this node out of the job"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("reports the job to a scheduler"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("abandoned"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("200 steps checked"), std::string::npos) << r.output;
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler", "no heartbeat for");
}

// A worker started with the job's DMLC_* while it runs joins it at a
// regroup: the others abandon their step, take it in, and all go on from
// rank 0's step, every sum counting the newcomer.
TEST(ElasticTest, AWorkerStartedLaterJoinsTheJob) {
  ElasticJob job("2x1", kElastic);
  auto server = job.server(0, 0);
  const Env until = {{"REGROUP_UNTIL_SIZE", "3"}};
  auto w0 = job.regroup_worker(0, {"20"}, until);
  auto w1 = job.regroup_worker(1, {"20"}, until);
  ASSERT_TRUE(w0->wait_for_output("step 5 done", 90)) << w0->output();
  ProcessSpec s = job.spec("worker", REGROUP_WORKER_BIN, 3, 1, until);
  s.argv = {REGROUP_WORKER_BIN, "20"};
  RunningProcess w2(s);
  expect_clean_exit(*w0, "worker 0", "steps checked as rank 0 of 3, regrouped 1 time(s)");
  expect_clean_exit(*w1, "worker 1", "steps checked as rank 1 of 3, regrouped 1 time(s)");
  expect_clean_exit(w2, "worker 2", "steps checked as rank 2 of 3, regrouped 0 time(s)");
  EXPECT_EQ(w2.output().find("at step 0 "), std::string::npos) << w2.output();
  expect_clean_exit(*server, "server");
  expect_clean_exit(*job.scheduler, "scheduler", "joins the job");
}

// REGROUP_STOP_FILE for regroup_worker: absent until touch(), removed at
// the end whatever the test's outcome.
struct StopFile {
  explicit StopFile(const std::string& name)
      : path(::testing::TempDir() + name + std::to_string(getpid())) {
    std::remove(path.c_str());
  }
  ~StopFile() { std::remove(path.c_str()); }
  void touch() const { std::ofstream(path) << "stop\n"; }
  const std::string path;
};

// A server started with the job's DMLC_* while it runs joins it at a
// regroup, and takes keys: once the first server is then killed, the
// workers go on with the newcomer alone, every sum exact.
TEST(ElasticTest, AServerStartedLaterJoinsTheJob) {
  StopFile stop("caravan_server_joins_");
  ElasticJob job("2x1", {{"CARAVAN_ELASTIC", "1"}, {"REGROUP_STOP_FILE", stop.path}});
  auto server0 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "0"}});
  auto w0 = job.regroup_worker(0, {"1000000"});
  auto w1 = job.regroup_worker(1, {"1000000"});
  ASSERT_TRUE(w0->wait_for_output("step 5 done", 90)) << w0->output();
  auto server1 = job.server(2, 2);
  ASSERT_TRUE(w0->wait_for_output("(regroup 1)", 90)) << w0->output();
  server0->signal(SIGKILL);
  expect_killed(*server0, "server 0");
  ASSERT_TRUE(w0->wait_for_output("(regroup 2)", 90)) << w0->output();
  // A step done after the second regroup: every key on the newcomer.
  std::string out = w0->output();
  size_t at = out.find("at step ", out.find("(regroup 2)"));
  if (at == std::string::npos) {
    ASSERT_TRUE(w0->wait_for_output("(regroup 2)\nat step ", 90)) << w0->output();
    out = w0->output();
    at = out.find("at step ", out.find("(regroup 2)"));
  }
  const std::string done =
      "step " + std::to_string(std::atoi(out.c_str() + at + 8)) + " done as rank 0 of 2";
  ASSERT_TRUE(w0->wait_for_output(done, 90)) << w0->output();
  stop.touch();
  expect_clean_exit(*w0, "worker 0", "steps checked as rank 0 of 2, regrouped 2 time(s)");
  expect_clean_exit(*w1, "worker 1", "steps checked as rank 1 of 2, regrouped 2 time(s)");
  expect_clean_exit(*server1, "server 1");
  expect_clean_exit(*job.scheduler, "scheduler", "joins the job");
}

// The highest S of the "step S done" lines in `out`.
int last_step(const std::string& out) {
  int last = 0;
  for (size_t at = out.find("step "); at != std::string::npos; at = out.find("step ", at + 1))
    last = std::max(last, std::atoi(out.c_str() + at + 5));
  return last;
}

// The scheduler killed mid-training: the workers and servers train on
// without it (50 steps more are waited for); a scheduler started again at
// its port takes the job over from their reports, and the job ends
// through it, cleanly, every sum exact and nothing regrouped.
TEST(ElasticTest, ASchedulerStartedAgainTakesTheJobOver) {
  StopFile stop("caravan_scheduler_again_");
  ElasticJob job("2x2", {{"CARAVAN_ELASTIC", "1"}, {"REGROUP_STOP_FILE", stop.path}});
  auto server0 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "0"}});
  auto server1 = job.server(0, 0, {{"CARAVAN_SERVER_ID", "1"}});
  auto w0 = job.regroup_worker(0, {"1000000"});
  auto w1 = job.regroup_worker(1, {"1000000"});
  ASSERT_TRUE(w0->wait_for_output("step 5 done", 90)) << w0->output();
  job.scheduler->signal(SIGKILL);
  expect_killed(*job.scheduler, "the first scheduler");
  ASSERT_TRUE(w0->wait_for_output("training goes on (CARAVAN_ELASTIC)", 90)) << w0->output();
  const std::string later = "step " + std::to_string(last_step(w0->output()) + 50) + " done";
  ASSERT_TRUE(w0->wait_for_output(later, 90)) << w0->output();
  auto again = job.start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {});
  ASSERT_TRUE(w0->wait_for_output("took the job over", 90)) << w0->output();
  stop.touch();
  expect_clean_exit(*w0, "worker 0", "steps checked as rank 0 of 2, regrouped 0 time(s)");
  expect_clean_exit(*w1, "worker 1", "steps checked as rank 1 of 2, regrouped 0 time(s)");
  expect_clean_exit(*server0, "server 0");
  expect_clean_exit(*server1, "server 1");
  expect_clean_exit(*again, "the scheduler started again",
                    "took the job over from the reports of all its 4 nodes");
}

// A worker killed while the job has no scheduler never reports to the one
// started again: past CARAVAN_CONNECT_TIMEOUT from the first report, that
// one regroups the job without it, and the others train on as 2.
TEST(ElasticTest, ANodeLostWithoutASchedulerIsLeftOutByTheNext) {
  StopFile stop("caravan_scheduler_regroups_");
  ElasticJob job("3x1", {{"CARAVAN_ELASTIC", "1"}, {"REGROUP_STOP_FILE", stop.path}});
  auto server = job.server(0, 0);
  std::vector<std::unique_ptr<RunningProcess>> w;
  for (int i = 0; i < 3; ++i) w.push_back(job.regroup_worker(i, {"1000000"}));
  ASSERT_TRUE(w[0]->wait_for_output("step 5 done", 90)) << w[0]->output();
  job.scheduler->signal(SIGKILL);
  expect_killed(*job.scheduler, "the first scheduler");
  ASSERT_TRUE(w[2]->wait_for_output("training goes on (CARAVAN_ELASTIC)", 90)) << w[2]->output();
  w[2]->signal(SIGKILL);
  expect_killed(*w[2], "worker 2");
  auto again = job.start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {{"CARAVAN_CONNECT_TIMEOUT", "3"}});
  ASSERT_TRUE(w[0]->wait_for_output("(regroup 1)", 90)) << w[0]->output();
  stop.touch();
  expect_clean_exit(*w[0], "worker 0", "steps checked as rank 0 of 2, regrouped 1 time(s)");
  expect_clean_exit(*w[1], "worker 1", "steps checked as rank 1 of 2, regrouped 1 time(s)");
  expect_clean_exit(*server, "server");
  expect_clean_exit(
      *again, "the scheduler started again",
      "no report to the scheduler started again within 3 s (CARAVAN_CONNECT_TIMEOUT)");
}

// A server lost while no scheduler has the job: the workers whose sends to
// it fail wait for the next scheduler, which regroups without it, and
// train on with the other server.
TEST(ElasticTest, AServerLostWithoutASchedulerIsLeftOutByTheNext) {
  StopFile stop("caravan_scheduler_regroups_servers_");
  ElasticJob job("2x2", {{"CARAVAN_ELASTIC", "1"}, {"REGROUP_STOP_FILE", stop.path}});
  auto server0 = job.server(0, 0);
  auto server1 = job.server(0, 0);
  std::vector<std::unique_ptr<RunningProcess>> w;
  for (int i = 0; i < 2; ++i) w.push_back(job.regroup_worker(i, {"1000000"}));
  ASSERT_TRUE(w[0]->wait_for_output("step 5 done", 90)) << w[0]->output();
  job.scheduler->signal(SIGKILL);
  expect_killed(*job.scheduler, "the first scheduler");
  ASSERT_TRUE(server1->wait_for_output("training goes on (CARAVAN_ELASTIC)", 90))
      << server1->output();
  server1->signal(SIGKILL);
  expect_killed(*server1, "server 1");
  // The next scheduler comes 6 s later, past the 5 s a worker whose send
  // failed used to wait for a scheduler's word before failing.
  EXPECT_FALSE(w[0]->wait_for_output("push_pull failed", 6)) << w[0]->output();
  auto again = job.start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {{"CARAVAN_CONNECT_TIMEOUT", "3"}});
  ASSERT_TRUE(w[0]->wait_for_output("(regroup 1)", 90)) << w[0]->output();
  stop.touch();
  expect_clean_exit(*w[0], "worker 0", "steps checked as rank 0 of 2, regrouped 1 time(s)");
  expect_clean_exit(*w[1], "worker 1", "steps checked as rank 1 of 2, regrouped 1 time(s)");
  expect_clean_exit(*server0, "server 0");
  expect_clean_exit(*again, "the scheduler started again", "no report to the scheduler");
}

const char kToken[] = "elastic-test-token-0123456789abcdef";

// The scheduler killed at start-up, after the server and worker 0
// registered and before worker 1 did: both register again with the
// scheduler started next, and the job forms and trains as if nothing had
// happened. With CARAVAN_JOB_TOKEN: each registers again through the
// challenge.
TEST(ElasticTest, ASchedulerLostAtStartUpIsReplaced) {
  ElasticJob job("2x1", {{"CARAVAN_ELASTIC", "1"}, {"CARAVAN_JOB_TOKEN", kToken}});
  auto server = job.server(0, 0);
  auto w0 = job.regroup_worker(0, {"20"});
  ASSERT_TRUE(job.scheduler->wait_for_output(
      "registered 1 of 1 servers (DMLC_NUM_SERVER) and 1 of 2 workers", 90))
      << job.scheduler->output();
  job.scheduler->signal(SIGKILL);
  expect_killed(*job.scheduler, "the first scheduler");
  ASSERT_TRUE(w0->wait_for_output("before the job formed; this node registers again", 90))
      << w0->output();
  ASSERT_TRUE(server->wait_for_output("before the job formed; this node registers again", 90))
      << server->output();
  auto again = job.start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {});
  auto w1 = job.regroup_worker(1, {"20"});
  expect_clean_exit(*w0, "worker 0", "20 steps checked as rank 0 of 2, regrouped 0 time(s)");
  expect_clean_exit(*w1, "worker 1", "20 steps checked as rank 1 of 2, regrouped 0 time(s)");
  expect_clean_exit(*server, "server");
  expect_clean_exit(*again, "the scheduler started again");
}

// The scheduler killed while the job regroups: worker 1 was killed, worker
// 0 registered for the next generation, and the server, stopped, has not
// yet heard. Worker 0 registers with the scheduler started next, which
// takes the regroup over; the server, woken, comes back to it too; after
// CARAVAN_CONNECT_TIMEOUT without worker 1 the job goes on with the two.
// (With a job token: the nodes that registered before the takeover drew
// a new job nonce register again.)
TEST(ElasticTest, TheNextSchedulerTakesARegroupUnderWayOver) {
  StopFile stop("caravan_regroup_taken_over_");
  ElasticJob job("2x1", {{"CARAVAN_ELASTIC", "1"},
                         {"REGROUP_STOP_FILE", stop.path},
                         {"CARAVAN_CONNECT_TIMEOUT", "10"},
                         {"CARAVAN_JOB_TOKEN", kToken}});
  auto server = job.server(0, 0);
  auto w0 = job.regroup_worker(0, {"1000000"});
  auto w1 = job.regroup_worker(1, {"1000000"});
  ASSERT_TRUE(w0->wait_for_output("step 5 done", 90)) << w0->output();
  server->signal(SIGSTOP);
  w1->signal(SIGKILL);
  expect_killed(*w1, "worker 1");
  // "scheduler: registered worker (pid ...) again; waiting for server ..."
  ASSERT_TRUE(job.scheduler->wait_for_output(") again; ", 90)) << job.scheduler->output();
  job.scheduler->signal(SIGKILL);
  expect_killed(*job.scheduler, "the first scheduler");
  ASSERT_TRUE(w0->wait_for_output("before the job formed; this node registers again", 90))
      << w0->output();
  auto again = job.start("scheduler", CARAVAN_SERVER_BIN, 0, 0, {});
  ASSERT_TRUE(again->wait_for_output("this scheduler takes the regroup over", 90))
      << again->output();
  server->signal(SIGCONT);
  ASSERT_TRUE(w0->wait_for_output("rejoined as rank 0 of 1", 90)) << w0->output();
  stop.touch();
  expect_clean_exit(*w0, "worker 0", "steps checked as rank 0 of 1, regrouped 1 time(s)");
  expect_clean_exit(*server, "server");
  expect_clean_exit(*again, "the scheduler started again",
                    "the 1 of the last generation's 3 nodes that did not come back");
}

// Beyond CARAVAN_MAX_WORKERS a new worker is refused, and the job goes on
// untouched (no regroup: the others' steps are not abandoned).
TEST(ElasticTest, AWorkerBeyondTheMaximumIsRefused) {
  ElasticJob job("2x1", {{"CARAVAN_ELASTIC", "1"}, {"CARAVAN_MAX_WORKERS", "2"}});
  auto server = job.server(0, 0);
  auto w0 = job.regroup_worker(0, {"1000000"});
  auto w1 = job.regroup_worker(1, {"1000000"});
  ASSERT_TRUE(w0->wait_for_output("step 5 done", 90)) << w0->output();
  ProcessSpec s = job.spec("worker", REGROUP_WORKER_BIN, 3, 1, {});
  s.argv = {REGROUP_WORKER_BIN, "20"};
  ProcessResult r = run_process(s);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the job has its CARAVAN_MAX_WORKERS=2 workers"), std::string::npos)
      << r.output;
  // Steps done after the refusal, by the same two workers.
  std::string later =
      "step " + std::to_string(last_step(w0->output()) + 50) + " done as rank 0 of 2";
  ASSERT_TRUE(w0->wait_for_output(later, 90)) << w0->output();
  EXPECT_EQ(w0->output().find("abandoned"), std::string::npos) << w0->output();
}

// --- caravan-launch --elastic: lost workers and servers started again. ---

ProcessSpec elastic_launch(const std::vector<std::string>& args, const Env& env) {
  ProcessSpec s;
  s.argv = {CARAVAN_LAUNCH_BIN, "--elastic"};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.timeout_s = 120;
  s.set_env = {{"BYTEPS_PARTITION_BYTES", "4096"}};
  s.set_env.insert(s.set_env.end(), env.begin(), env.end());
  return s;
}

// The pids in `out` of the log lines of child `name` ("[server 1] [caravan
// I ... server pid N]"), in order.
std::vector<int> logged_pids(const std::string& out, const std::string& name) {
  std::vector<int> pids;
  const std::string head = "[" + name + "] [caravan ";
  for (size_t at = out.find(head); at != std::string::npos; at = out.find(head, at + 1)) {
    size_t pid = out.find(" pid ", at);
    if (pid == std::string::npos || pid > out.find('\n', at)) continue;
    int p = std::atoi(out.c_str() + pid + 5);
    if (std::find(pids.begin(), pids.end(), p) == pids.end()) pids.push_back(p);
  }
  return pids;
}

// Worker 1 of 3 kills itself at step 5: the launcher starts another, which
// joins; the three finish together (REGROUP_UNTIL_SIZE), every sum exact.
TEST(ElasticTest, TheLauncherStartsALostWorkerAgain) {
  ProcessSpec s =
      elastic_launch({"--workers", "3", "--servers", "1", "--", REGROUP_WORKER_BIN, "30", "1", "5"},
                     {{"REGROUP_UNTIL_SIZE", "3"}});
  ProcessResult r = run_process(s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("worker 1 (pid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("killed by signal 9 (Killed); starting it again"), std::string::npos)
      << r.output;
  EXPECT_EQ(count_of(r.output, "steps checked as rank"), 3) << r.output;
  EXPECT_NE(r.output.find("of 3, regrouped 0 time(s)"), std::string::npos)
      << r.output;  // the new one
  EXPECT_NE(r.output.find("1 process(es) started again (--elastic), and all exited 0"),
            std::string::npos)
      << r.output;
}

// Server 1 of 2 is killed mid-training: the launcher starts another, which
// joins at a regroup and serves until the end.
TEST(ElasticTest, TheLauncherStartsALostServerAgain) {
  StopFile stop("caravan_launcher_server_");
  RunningProcess launcher(
      elastic_launch({"--workers", "2", "--servers", "2", "--", REGROUP_WORKER_BIN, "1000000"},
                     {{"REGROUP_STOP_FILE", stop.path}, {"PS_VERBOSE", "1"}}));
  ASSERT_TRUE(launcher.wait_for_output("step 5 done", 90)) << launcher.output();
  std::vector<int> first = logged_pids(launcher.output(), "server 1");
  ASSERT_EQ(first.size(), 1u) << launcher.output();
  kill(first[0], SIGKILL);
  // The replacement's log lines carry its own pid; it joined once it says so.
  std::vector<int> pids;
  ASSERT_TRUE(launcher.wait_for(
      [&](const std::string& out) { return (pids = logged_pids(out, "server 1")).size() >= 2; },
      90))
      << launcher.output();
  const std::string joined = "pid " + std::to_string(pids[1]) + "] joined the job as server";
  ASSERT_TRUE(launcher.wait_for_output(joined, 90)) << launcher.output();
  stop.touch();
  ProcessResult r = launcher.wait(90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("server 1 (pid " + std::to_string(first[0]) +
                          ") killed by signal 9 (Killed); starting it again"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 process(es) started again (--elastic), and all exited 0"),
            std::string::npos)
      << r.output;
}

// The scheduler caravan-launch started is killed mid-training: the
// launcher starts another on the socket it kept, which takes the job over
// from the nodes, and the job ends through it with status 0.
TEST(ElasticTest, TheLauncherStartsALostSchedulerAgain) {
  StopFile stop("caravan_launcher_scheduler_");
  RunningProcess launcher(
      elastic_launch({"--workers", "2", "--servers", "1", "--", REGROUP_WORKER_BIN, "1000000"},
                     {{"REGROUP_STOP_FILE", stop.path}, {"PS_VERBOSE", "1"}}));
  ASSERT_TRUE(launcher.wait_for_output("step 5 done", 90)) << launcher.output();
  std::vector<int> first = logged_pids(launcher.output(), "scheduler");
  ASSERT_EQ(first.size(), 1u) << launcher.output();
  kill(first[0], SIGKILL);
  ASSERT_TRUE(launcher.wait_for_output("took the job over from the reports of all its 3 nodes", 90))
      << launcher.output();
  stop.touch();
  ProcessResult r = launcher.wait(90);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("scheduler (pid " + std::to_string(first[0]) +
                          ") killed by signal 9 (Killed); starting it again, to take the job over"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(count_of(r.output, "regrouped 0 time(s)"), 2) << r.output;
  EXPECT_NE(r.output.find("1 process(es) started again (--elastic), and all exited 0"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace caravan::test
