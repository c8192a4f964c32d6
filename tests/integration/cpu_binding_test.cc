// Workers really run bound: a job's worker reports, from /proc, the CPUs
// each of its threads may use, after BYTEPS_* asked for a binding.
#include <gtest/gtest.h>
#include <sched.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

// The "cpus_allowed" lists the worker printed, one per thread.
std::vector<std::string> thread_cpus(const std::string& output) {
  std::vector<std::string> lists;
  const std::string tag = "cpus_allowed ";
  for (size_t p = output.find(tag); p != std::string::npos; p = output.find(tag, p + 1)) {
    size_t start = p + tag.size();
    lists.push_back(output.substr(start, output.find('\n', start) - start));
  }
  return lists;
}

// The highest CPU this test may run on: not CPU 0, where an unbound
// process would often be found anyway, whenever there is a choice.
int last_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = CPU_SETSIZE - 1; c >= 0; --c)
    if (CPU_ISSET(c, &set)) return c;
  return -1;
}

// What the test's own environment could add to a worker's CPU binding.
const std::vector<std::string> kCpuVariables = {
    "BYTEPS_NUMA_ON",           "BYTEPS_NUMA_DEFAULT_QUOTA", "BYTEPS_CPU_BLACKLIST",
    "BYTEPS_VISIBLE_CPU_CORES", "BYTEPS_MULTITHREADED_CPU",  "BYTEPS_LOCAL_RANK",
    "BYTEPS_LOCAL_SIZE"};

ProcessResult run_job(std::vector<std::pair<std::string, std::string>> env) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN,     "--workers", "1", "--servers", "1", "--",
               CPU_AFFINITY_WORKER_BIN};
  spec.set_env = std::move(env);
  spec.unset_env = kCpuVariables;
  spec.timeout_s = 60;
  return run_process(spec);
}

TEST(CpuBindingTest, VisibleCpuCoresBindsEveryThreadOfTheWorker) {
  int cpu = last_allowed_cpu();
  ASSERT_GE(cpu, 0);
  ProcessResult r =
      run_job({{"BYTEPS_VISIBLE_CPU_CORES", std::to_string(cpu)}, {"BYTEPS_LOG_LEVEL", "info"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lists = thread_cpus(r.output);
  // The engine's threads (van, control) are there besides main.
  EXPECT_GE(lists.size(), 2u) << r.output;
  for (const std::string& l : lists) EXPECT_EQ(l, std::to_string(cpu)) << r.output;
  EXPECT_NE(r.output.find("bound to CPUs " + std::to_string(cpu) + ": 1 core(s)"),
            std::string::npos)
      << r.output;
}

// The local ranks of one machine (BYTEPS_LOCAL_SIZE=2, no scheduler) each
// bind to their own section of BYTEPS_VISIBLE_CPU_CORES, and a single
// worker of a one-worker job checks and applies the CPU variables too.
// Before, only a process that joined a scheduler bound itself: local ranks
// above 0 and single workers ran wherever they were started, and took any
// value of these variables silently.
TEST(CpuBindingTest, WorkersThatJoinNoSchedulerBindToo) {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs this test may use, has " << cpus.size();
  std::string sections = std::to_string(cpus[0]) + ":" + std::to_string(cpus[1]);
  std::vector<std::unique_ptr<RunningProcess>> ranks;
  for (int l = 0; l < 2; ++l) {
    ProcessSpec spec;
    spec.argv = {CPU_AFFINITY_WORKER_BIN};
    spec.unset_env = kCpuVariables;
    spec.unset_env.insert(spec.unset_env.end(), {"DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT",
                                                 "DMLC_NUM_SERVER", "BYTEPS_FORCE_DISTRIBUTED"});
    spec.set_env = {{"DMLC_ROLE", "worker"},
                    {"DMLC_NUM_WORKER", "1"},
                    {"BYTEPS_LOCAL_SIZE", "2"},
                    {"BYTEPS_LOCAL_RANK", std::to_string(l)},
                    {"BYTEPS_VISIBLE_CPU_CORES", sections}};
    spec.timeout_s = 60;
    ranks.push_back(std::make_unique<RunningProcess>(spec));
  }
  for (int l = 0; l < 2; ++l) {
    ProcessResult r = ranks[static_cast<size_t>(l)]->wait(60);
    ASSERT_FALSE(r.timed_out) << r.output;
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> lists = thread_cpus(r.output);
    EXPECT_GE(lists.size(), 2u) << r.output;
    for (const std::string& got : lists)
      EXPECT_EQ(got, std::to_string(cpus[static_cast<size_t>(l)])) << "local rank " << l << ":\n"
                                                                   << r.output;
  }
  ProcessSpec single;
  single.argv = {CPU_AFFINITY_WORKER_BIN};
  single.unset_env = kCpuVariables;
  single.set_env = {
      {"DMLC_ROLE", "worker"}, {"DMLC_NUM_WORKER", "1"}, {"BYTEPS_VISIBLE_CPU_CORES", "garbage"}};
  single.timeout_s = 60;
  ProcessResult r = run_process(single);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("BYTEPS_VISIBLE_CPU_CORES='garbage'"), std::string::npos) << r.output;
}

TEST(CpuBindingTest, BadVisibleCpuCoresStopsTheWorkerNamingIt) {
  ProcessResult r = run_job({{"BYTEPS_VISIBLE_CPU_CORES", "0-2,zero"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("BYTEPS_VISIBLE_CPU_CORES='0-2,zero': 'zero' is not a CPU number"),
            std::string::npos)
      << r.output;

  r = run_job({{"BYTEPS_VISIBLE_CPU_CORES", "65535"}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("BYTEPS_VISIBLE_CPU_CORES='65535': CPU 65535"), std::string::npos)
      << r.output;
}

// BYTEPS_NUMA_ON=0 leaves the binding the worker was started with (here the
// test's own, narrowed to one CPU) exactly as it was.
TEST(CpuBindingTest, NumaOffLeavesTheInheritedBindingAlone) {
  int cpu = last_allowed_cpu();
  ASSERT_GE(cpu, 0);
  cpu_set_t before, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  ProcessResult r = run_job({{"BYTEPS_NUMA_ON", "0"}});
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> lists = thread_cpus(r.output);
  EXPECT_GE(lists.size(), 2u) << r.output;
  for (const std::string& l : lists) EXPECT_EQ(l, std::to_string(cpu)) << r.output;
}

}  // namespace
}  // namespace caravan::test
