// Runs a real program for a test: captured output, extra environment, and
// a hard deadline after which the whole process group is killed.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace caravan::test {

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
  std::string output;  // stdout and stderr interleaved
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  double timeout_s = 60;
};

ProcessResult run_process(const ProcessSpec& spec);

// A program running in the background, its output read on demand.
class RunningProcess {
 public:
  explicit RunningProcess(const ProcessSpec& spec);
  ~RunningProcess();  // kills what is still running
  RunningProcess(const RunningProcess&) = delete;
  RunningProcess& operator=(const RunningProcess&) = delete;

  int pid() const { return pid_; }
  void signal(int sig);
  // Reads output until it contains `needle` or `timeout_s` passes.
  bool wait_for_output(const std::string& needle, double timeout_s);
  // Reads output until done(output) holds or `timeout_s` passes.
  bool wait_for(const std::function<bool(const std::string&)>& done, double timeout_s);
  // Waits for the exit (killing it after timeout_s, then timed_out is set).
  ProcessResult wait(double timeout_s);
  const std::string& output() const { return result_.output; }

 private:
  bool read_some(int timeout_ms);
  int pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  double start_ = 0;
  ProcessResult result_;
};

// `launcher` (caravan-launch) starting a job of `workers` and `servers` on
// this machine, every worker running `command`.
ProcessSpec launch_spec(const std::string& launcher, int workers, int servers,
                        const std::vector<std::string>& command,
                        std::vector<std::pair<std::string, std::string>> env = {},
                        double timeout_s = 60);

// The environment a local job needs for one node, without any launcher.
std::vector<std::pair<std::string, std::string>> node_env(const std::string& role, int port,
                                                          int workers, int servers);
// A TCP port that was free a moment ago on every address, below the
// kernel's ephemeral range.
int free_port();

// How often `needle` occurs in `text` (overlaps counted).
int count_of(const std::string& text, const std::string& needle);

}  // namespace caravan::test
