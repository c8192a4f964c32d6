// BYTEPS_ENABLE_IPC on whole jobs of real processes on one host: values go
// through POSIX shared memory and the van carries only slot descriptors;
// sums stay exact in synchronous and asynchronous mode; errors still reach
// every worker; a server that cannot map a worker's memory, or sits on
// another host, gets the values through the van; and no segment is left
// in /dev/shm, after a clean end or a killed worker.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/outcome.h"
#include "tests/support/process.h"

namespace caravan::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) out.push_back(line);
  return out;
}

// "caravan-ipc-127.0.0.1-41234-": the start of every segment name of the
// job whose output this is (segment names hold the scheduler's address),
// taken from the first segment a log line names.
std::string job_segment_prefix(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("/(caravan-ipc-[0-9.]+-[0-9]+-)s[0-9]+-w")))
    return "";
  return m[1];
}

std::vector<std::string> segments_in_dev_shm(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(e->d_name);
  closedir(d);
  return out;
}

// What a worker killed between making a segment and its server mapping
// it leaves in /dev/shm: a name no one will ever map.
void leave_unmapped_segment(const std::string& name) {
  int fd = shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0) << name << ": " << std::strerror(errno);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += x + "\n";
  return s;
}

ProcessResult launch(int workers, int servers, const std::vector<std::string>& command, Env env,
                     double timeout_s) {
  return run_process(
      launch_spec(CARAVAN_LAUNCH_BIN, workers, servers, command, std::move(env), timeout_s));
}

TEST(IpcJob, TwoWorkersTwoServersSumExactlyThroughSharedMemory) {
  // Small partitions: many keys per tensor, spread over both servers.
  ProcessResult r = launch(2, 2, {SUM_CHECK_WORKER_BIN, "2", "100000"},
                           {{"BYTEPS_ENABLE_IPC", "1"},
                            {"BYTEPS_PARTITION_BYTES", "65536"},
                            {"BYTEPS_LOG_LEVEL", "info"},
                            {"PS_VERBOSE", "2"}},
                           240);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "all sums exact"), 2) << r.output;
  // Each worker with each server.
  EXPECT_EQ(count_of(r.output, "go through shared memory"), 4) << r.output;
  EXPECT_GE(count_of(r.output, "mapped its shared-memory segment"), 4) << r.output;
  // Every partition went through shared memory...
  auto sends = lines_with(r.output, "push_pull: send '");
  EXPECT_GT(sends.size(), 2u * 32u);
  for (const std::string& line : sends)
    ASSERT_NE(line.find("through shared memory"), std::string::npos) << line;
  // ... and every message the van carried, both ways, was a descriptor or
  // an attach request, never values.
  auto messages = lines_with(r.output, "kv: ");
  EXPECT_GE(messages.size(), 4 * sends.size());  // send and receive, both ways
  std::regex vals(" vals ([0-9]+) B");
  for (const std::string& line : messages) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(line, m, vals)) << line;
    EXPECT_LE(std::stoul(m[1]), 128u) << line;
  }
  std::string prefix = job_segment_prefix(r.output);
  ASSERT_FALSE(prefix.empty()) << r.output;
  EXPECT_EQ(joined(segments_in_dev_shm(prefix)), "");
}

TEST(IpcJob, MisuseAndSizeMismatchStillAnswerEveryWorker) {
  ProcessResult r = launch(2, 2, {API_MISUSE_WORKER_BIN},
                           {{"BYTEPS_ENABLE_IPC", "1"}, {"BYTEPS_LOG_LEVEL", "info"}}, 60);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "0 failures"), 2) << r.output;
  // The server found the mismatch in the workers' slots.
  EXPECT_NE(r.output.find("different sizes or dtypes"), std::string::npos) << r.output;
  EXPECT_EQ(count_of(r.output, "go through shared memory"), 4) << r.output;
  EXPECT_EQ(joined(segments_in_dev_shm(job_segment_prefix(r.output))), "");
}

void expect_async_store_exact(const std::string& ipc) {
  ProcessResult r = launch(3, 2, {ASYNC_DELTA_WORKER_BIN, "10", "300000"},
                           {{"BYTEPS_ENABLE_ASYNC", "1"},
                            {"BYTEPS_ENABLE_IPC", ipc},
                            {"BYTEPS_PARTITION_BYTES", "262144"},
                            {"BYTEPS_LOG_LEVEL", "info"}},
                           120);
  ASSERT_TRUE(Succeeded(r));
  EXPECT_EQ(count_of(r.output, "async store exact (60)"), 3) << r.output;
  EXPECT_EQ(count_of(r.output, "go through shared memory"), ipc == "1" ? 6 : 0) << r.output;
}

TEST(IpcJob, AsyncModeAddsEveryPushThroughSharedMemory) { expect_async_store_exact("1"); }
// The same job through the van: the check itself holds without IPC.
TEST(IpcJob, AsyncModeAddsEveryPushThroughTheVan) { expect_async_store_exact("0"); }

// A job started node by node, each with its own environment.
class NodeByNodeJob {
 public:
  NodeByNodeJob(int num_workers, int num_servers) : workers_(num_workers), servers_(num_servers) {
    port_ = free_port();
    scheduler_ = start("scheduler", CARAVAN_SERVER_BIN, {}, {});
  }
  RunningProcess& server(int rank, Env env) {
    env.push_back({"CARAVAN_SERVER_ID", std::to_string(rank)});
    servers.push_back(start("server", CARAVAN_SERVER_BIN, {}, std::move(env)));
    return *servers.back();
  }
  RunningProcess& worker(int rank, std::vector<std::string> args, Env env) {
    env.push_back({"DMLC_WORKER_ID", std::to_string(rank)});
    workers.push_back(start("worker", SUM_CHECK_WORKER_BIN, std::move(args), std::move(env)));
    return *workers.back();
  }
  // "caravan-ipc-127.0.0.1-<port>-"
  std::string segment_prefix() const {
    return "caravan-ipc-127.0.0.1-" + std::to_string(port_) + "-";
  }
  RunningProcess& scheduler() { return *scheduler_; }

  std::vector<std::unique_ptr<RunningProcess>> servers, workers;

 private:
  std::unique_ptr<RunningProcess> start(const std::string& role, const std::string& bin,
                                        std::vector<std::string> args, Env env) {
    ProcessSpec s;
    s.argv = {bin};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.set_env = node_env(role, port_, workers_, servers_);
    s.set_env.push_back({"BYTEPS_LOG_LEVEL", "info"});
    s.set_env.push_back({"PS_HEARTBEAT_INTERVAL", "1"});
    s.set_env.push_back({"PS_HEARTBEAT_TIMEOUT", "3"});
    // Later entries win: a node's own environment comes last.
    s.set_env.insert(s.set_env.end(), env.begin(), env.end());
    return std::make_unique<RunningProcess>(s);
  }
  int workers_, servers_, port_;  // the job's size, the scheduler's port
  std::unique_ptr<RunningProcess> scheduler_;
};

// Server 0 shares memory; server 1 runs without BYTEPS_ENABLE_IPC, so it
// cannot map the worker's segment and says so; server 2 advertises another
// address, so no worker tries. Worker 1 runs without BYTEPS_ENABLE_IPC: on
// server 0 its van pushes and worker 0's slots meet in the same keys.
TEST(IpcJob, ServersThatCannotShareMemoryGetValuesThroughTheVan) {
  NodeByNodeJob job(2, 3);
  Env ipc = {{"BYTEPS_ENABLE_IPC", "1"}};
  job.server(0, ipc);
  job.server(1, {});
  job.server(2, {{"BYTEPS_ENABLE_IPC", "1"}, {"DMLC_NODE_HOST", "127.0.0.2"}});
  std::vector<std::string> args = {"3", "100000"};
  Env small = {{"BYTEPS_PARTITION_BYTES", "65536"}};
  Env w0 = small;
  w0.push_back({"BYTEPS_ENABLE_IPC", "1"});
  RunningProcess& worker0 = job.worker(0, args, w0);
  RunningProcess& worker1 = job.worker(1, args, small);
  for (RunningProcess* w : {&worker0, &worker1}) {
    ProcessResult r = w->wait(180);
    ASSERT_TRUE(Succeeded(r));
    EXPECT_NE(r.output.find("all sums exact"), std::string::npos) << r.output;
  }
  const std::string& out = worker0.output();
  EXPECT_EQ(lines_with(out, "go through shared memory").size(), 1u) << out;
  EXPECT_EQ(lines_with(out, "values for server 0 (").size(), 1u) << out;
  auto refused = lines_with(out, "cannot map this worker's shared memory");
  ASSERT_EQ(refused.size(), 1u) << out;
  EXPECT_NE(refused[0].find("server 1 ("), std::string::npos) << out;
  EXPECT_NE(refused[0].find("(BYTEPS_ENABLE_IPC is not set on this server"), std::string::npos)
      << out;
  auto other_host = lines_with(out, "is on another host: values for it go through the van");
  ASSERT_EQ(other_host.size(), 1u) << out;
  EXPECT_NE(other_host[0].find("server 2 ("), std::string::npos) << out;
  EXPECT_EQ(worker1.output().find("shared memory"), std::string::npos) << worker1.output();
  for (auto& s : job.servers) {
    ProcessResult r = s->wait(30);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_EQ(job.scheduler().wait(30).exit_code, 0);
  EXPECT_EQ(joined(segments_in_dev_shm(job.segment_prefix())), "");
}

// Names are removed as soon as the server mapped them, so a worker killed
// in the middle of its job leaves nothing behind, and the others still
// notice the loss and end. Killed in the instant between making a segment
// and the server mapping it, a worker does leave the name: the server,
// ending with the job, removes it.
TEST(IpcJob, KilledWorkerLeavesNoSegmentBehind) {
  NodeByNodeJob job(2, 1);
  Env ipc = {{"BYTEPS_ENABLE_IPC", "1"}};
  RunningProcess& server = job.server(0, ipc);
  // Tensors of at most 10000 elements: every slot fits in the first
  // segment, so once it is mapped no other segment is ever made.
  std::vector<std::string> forever = {"100000", "10000"};
  RunningProcess& victim = job.worker(0, forever, ipc);
  RunningProcess& other = job.worker(1, forever, ipc);
  ASSERT_TRUE(victim.wait_for_output("go through shared memory", 30)) << victim.output();
  ASSERT_TRUE(other.wait_for_output("go through shared memory", 30)) << other.output();
  EXPECT_EQ(joined(segments_in_dev_shm(job.segment_prefix())), "")
      << "a segment kept its name after the server mapped it";
  // Server 0 is node 8, worker 0 node 9.
  leave_unmapped_segment(job.segment_prefix() + "s8-w9-p" + std::to_string(victim.pid()) + "-1");
  victim.signal(SIGKILL);
  victim.wait(10);
  for (RunningProcess* p : {&other, &server, &job.scheduler()}) {
    ProcessResult r = p->wait(10);
    EXPECT_FALSE(r.timed_out) << r.output;
    EXPECT_GT(r.exit_code, 0) << r.output;
  }
  EXPECT_NE(other.output().find("lost worker 0"), std::string::npos) << other.output();
  EXPECT_NE(server.output().find("removed 1 shared-memory segment(s)"), std::string::npos)
      << server.output();
  EXPECT_EQ(joined(segments_in_dev_shm(job.segment_prefix())), "");
}

// Under caravan-launch the servers may be stopped before they can clean
// up; the launcher removes what is left of the job once all are gone.
TEST(IpcJob, LaunchedJobLeavesNoSegmentWhenAWorkerIsKilled) {
  // One worker: the line below is its own.
  RunningProcess launcher(launch_spec(CARAVAN_LAUNCH_BIN, 1, 1,
                                      {SUM_CHECK_WORKER_BIN, "100000", "10000"},
                                      {{"BYTEPS_ENABLE_IPC", "1"}, {"BYTEPS_LOG_LEVEL", "info"}}));
  ASSERT_TRUE(launcher.wait_for_output("go through shared memory", 30)) << launcher.output();
  std::smatch m;
  std::string out = launcher.output();
  ASSERT_TRUE(
      std::regex_search(out, m,
                        std::regex("worker 0 pid ([0-9]+)\\] values for server 0 .* segment /"
                                   "(caravan-ipc-[0-9.]+-[0-9]+-)(s[0-9]+-w[0-9]+-)")))
      << out;
  int pid = std::stoi(m[1]);
  std::string prefix = m[2];
  leave_unmapped_segment(prefix + std::string(m[3]) + "p" + std::to_string(pid) + "-1");
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ProcessResult r = launcher.wait(30);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  EXPECT_EQ(joined(segments_in_dev_shm(prefix)), "") << r.output;
}

}  // namespace
}  // namespace caravan::test
