#include "job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "prefixer.h"

extern char** environ;

namespace caravan::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kGrace = std::chrono::seconds(5);
constexpr auto kSettle = std::chrono::seconds(1);              // Supervisor::settle_until_
constexpr auto kLookForNewChildren = std::chrono::seconds(1);  // Elasticity::added
constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};

// Self-pipe: the handler only records the signal; the poll loop acts on it.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_signal_pipe[1], &b, 1);
  (void)ignored;  // a full pipe already holds a wake-up
  errno = saved;
}

void Say(const std::string& msg) {
  std::string line = "caravan-launch: " + msg + "\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};  // stdout may be a non-blocking fd we inherited
      poll(&p, 1, -1);
    } else {
      return;  // nobody is reading our stdout any more; keep supervising
    }
  }
}

std::string DescribeStatus(int status) {
  char buf[128];
  if (WIFEXITED(status)) {
    snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(status));
  } else {
    int sig = WTERMSIG(status);
    const char* what = strsignal(sig);
    snprintf(buf, sizeof buf, "killed by signal %d (%s)", sig, what ? what : "unknown");
  }
  return buf;
}

bool Failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// Killed, or (through ssh or a shell) exited with a killed process's status:
// more likely the cause of a job's end than a peer that exited 1 because the
// job ended. SIGTERM is what the launcher itself sends when it stops a job.
bool KilledHard(int status) {
  // 255 is ssh's own failure, not a signal.
  int sig = WIFSIGNALED(status) ? WTERMSIG(status)
            : WEXITSTATUS(status) > 128 && WEXITSTATUS(status) <= 128 + 64
                ? WEXITSTATUS(status) - 128
                : 0;
  return sig != 0 && sig != SIGTERM;
}

// Everything a forked child needs, built before fork so the child does no
// allocation between fork and exec.
struct ExecPlan {
  std::vector<char*> argv;
  std::vector<char*> envp;
  int listen_fd;
  explicit ExecPlan(const ChildSpec& spec) : listen_fd(spec.listen_fd) {
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
};

[[noreturn]] void ExecChild(ExecPlan& plan, int in_r, int out_w, int err_w, pid_t parent,
                            const sigset_t& original_mask) {
  setpgid(0, 0);
  // The launcher's death must take the job with it, even under SIGKILL.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the launcher died before prctl
  for (int sig : kHandledSignals) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);  // an ignored disposition would survive exec
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  // Several children sharing a terminal's stdin would steal each other's
  // input: each gets /dev/null or its own pipe.
  dup2(in_r, STDIN_FILENO);
  dup2(out_w, STDOUT_FILENO);
  dup2(err_w, STDERR_FILENO);
  // dup2 leaves the copy open across exec; the same number needs it said.
  if (plan.listen_fd == kInheritedListenFd)
    fcntl(kInheritedListenFd, F_SETFD, 0);
  else if (plan.listen_fd >= 0)
    dup2(plan.listen_fd, kInheritedListenFd);
  environ = plan.envp.data();
  execvp(plan.argv[0], plan.argv.data());
  char msg[512];
  int n = snprintf(msg, sizeof msg, "caravan-launch: cannot execute '%s': %s\n", plan.argv[0],
                   strerror(errno));
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, msg, std::min(static_cast<size_t>(n), sizeof msg - 1));
    (void)ignored;
  }
  _exit(127);
}

struct Child {
  const ChildSpec* spec;
  const ChildSpec* first;  // the one the plan gave (its replacement and domain)
  pid_t pid = -1;
  bool running = false;
  int fds[2] = {-1, -1};  // read ends of the child's stdout and stderr
  int stdin_w = -1;       // write end of its stdin pipe (ChildSpec::stdin_data), open while it runs
  // One per stream, so a line on stderr never splits a line on stdout.
  std::unique_ptr<LinePrefixer> prefixers[2];
  std::string Label() const { return spec->name + " (pid " + std::to_string(pid) + ")"; }
};

class Supervisor {
 public:
  Supervisor(const std::vector<ChildSpec>& specs, double timeout_seconds, const Elasticity& elastic)
      : timeout_seconds_(timeout_seconds), elastic_(elastic) {
    for (const auto& s : specs) children_.push_back(MakeChild(s, s));
  }

  JobOutcome Run();

 private:
  static Child MakeChild(const ChildSpec& spec, const ChildSpec& first) {
    Child c;
    c.spec = &spec;
    c.first = &first;
    for (auto& p : c.prefixers) p = std::make_unique<LinePrefixer>("[" + spec.name + "] ");
    return c;
  }
  bool Start(Child& c, int devnull, const sigset_t& original_mask);
  // Whether the job goes on after child `c` failed (Elasticity): it is
  // started again, or left out once its domain failed too often; says
  // which.
  bool KeepsTheJob(const Child& c, int status);
  // Whether a worker other than `gone` runs, or is to be started again.
  bool WorkerLeft(const Child& gone) const;
  // Starts the replacements KeepsTheJob() decided on, and the children
  // Elasticity::added has, when it is time to ask.
  void StartNewChildren(int devnull, const sigset_t& handled);
  // Start() with the handled signals blocked across fork, so no handler
  // runs in a child before it resets them.
  bool StartBlocked(Child& c, int devnull, const sigset_t& handled);
  bool StartNew(Child c, int devnull, const sigset_t& handled);
  void ReadOnce(Child& c, int stream);
  void Drain(Child& c);
  void CloseStream(Child& c, int stream);
  void ReapAll();
  void OnChildExit(Child& c, int status);
  void OnStopSignal(int sig);
  void Fail(int exit_code, std::string reason);
  void Stop();
  void CheckDeadlines();
  int PollTimeoutMs() const;
  bool AnyRunning() const {
    return std::any_of(children_.begin(), children_.end(),
                       [](const Child& c) { return c.running; });
  }

  struct Failure {
    Clock::time_point when;
    int status;
    std::string label;
  };
  // The job ended with failures: which one to name (see Run).
  void NameTheCause();
  // Copies a child's prefixed output to stdout, noting the scheduler's
  // "aborting the job: ..." line in ended_because_.
  void Forward(const Child& c, const std::string& text);

  double timeout_seconds_;
  Elasticity elastic_;
  std::map<std::string, int> domain_failures_;  // Elasticity's count
  std::vector<const ChildSpec*> to_restart_;    // the first specs of those to start again
  // A child ended cleanly: the job is finishing (a process started now
  // would find no job), so none is started again.
  bool finishing_ = false;
  int restarted_ = 0;
  std::set<int> kept_listeners_;       // the scheduler's socket, for its replacement
  std::deque<ChildSpec> added_specs_;  // Elasticity::added's, kept where children point
  int added_ = 0;
  Clock::time_point next_look_;  // when to ask Elasticity::added next
  std::vector<Child> children_;
  std::vector<Failure> failures_;  // every child that failed, in the order seen
  Clock::time_point start_;
  bool stopping_ = false;
  // After a child fails, the others are given this long to end on their own
  // (the engine ends the job at once) before they are stopped, so their
  // own exits, the first failure's cause among them, are seen.
  std::optional<Clock::time_point> settle_until_;
  bool killed_ = false;
  Clock::time_point kill_deadline_;
  JobOutcome outcome_;
  std::string ended_because_;  // the scheduler's reason for ending the job, once logged
};

JobOutcome Supervisor::Run() {
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    Say(std::string("cannot create a pipe: ") + strerror(errno));
    return {1, "internal error"};
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_NOCLDSTOP;
  for (int sig : kHandledSignals) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  sigset_t handled;  // blocked across each fork (StartBlocked)
  sigemptyset(&handled);
  for (int sig : kHandledSignals) sigaddset(&handled, sig);
  start_ = Clock::now();
  for (auto& c : children_)
    if (!StartBlocked(c, devnull, handled)) break;

  std::vector<pollfd> pfds;
  std::vector<std::pair<Child*, int>> owners;
  char scratch[256];
  while (AnyRunning()) {
    pfds.assign(1, pollfd{g_signal_pipe[0], POLLIN, 0});
    owners.assign(1, {nullptr, 0});
    for (auto& c : children_) {
      for (int s = 0; s < 2; ++s) {
        if (c.fds[s] < 0) continue;
        pfds.push_back(pollfd{c.fds[s], POLLIN, 0});
        owners.emplace_back(&c, s);
      }
    }
    int n = poll(pfds.data(), pfds.size(), PollTimeoutMs());
    if (n < 0 && errno != EINTR) {
      // Without poll there is no orderly way on; take everything down now.
      Fail(1, std::string("poll failed: ") + strerror(errno));
      for (auto& c : children_) {
        if (!c.running) continue;
        kill(-c.pid, SIGKILL);
        int status;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        OnChildExit(c, status);
      }
      break;
    }
    if (n > 0) {
      for (size_t i = 1; i < pfds.size(); ++i) {
        if (pfds[i].revents) ReadOnce(*owners[i].first, owners[i].second);
      }
    }
    // Reading the self-pipe before reaping means a SIGCHLD arriving after
    // this read leaves a byte behind and wakes the next poll.
    ssize_t got;
    while ((got = read(g_signal_pipe[0], scratch, sizeof scratch)) > 0) {
      for (ssize_t i = 0; i < got; ++i) {
        int sig = static_cast<unsigned char>(scratch[i]);
        if (sig != SIGCHLD) OnStopSignal(sig);
      }
    }
    ReapAll();
    StartNewChildren(devnull, handled);
    CheckDeadlines();
  }
  if (devnull >= 0) close(devnull);
  for (int fd : kept_listeners_) close(fd);
  for (auto& c : children_) Drain(c);
  NameTheCause();
  outcome_.restarts = restarted_;
  outcome_.added = added_;
  return outcome_;
}

// When one process dies, the engine ends the job and its peers exit 1
// within milliseconds: the first exit seen is often one of those. Among the
// failures seen before the others were stopped, one that was killed (a
// crash, the OOM killer, kill -9 on a remote host) is named instead.
void Supervisor::NameTheCause() {
  if (failures_.empty() ||
      outcome_.reason != failures_[0].label + " " + DescribeStatus(failures_[0].status))
    return;
  for (const Failure& f : failures_) {
    if (f.when - failures_[0].when > kSettle) break;
    if (&f == &failures_[0] || !KilledHard(f.status) || KilledHard(failures_[0].status)) continue;
    outcome_.reason = f.label + " " + DescribeStatus(f.status) + " (first, " + failures_[0].label +
                      " " + DescribeStatus(failures_[0].status) + ", then the job ended)";
    return;
  }
  // Otherwise the first exit seen may be a consequence (the scheduler ends
  // as soon as it loses a node, before that node's process is reaped).
  if (!ended_because_.empty())
    outcome_.reason += "; the scheduler ended the job: " + ended_because_;
}

bool Supervisor::Start(Child& c, int devnull, const sigset_t& original_mask) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    Fail(1, "cannot start " + c.spec->name + ": " + strerror(errno));
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    Fail(1, "cannot start " + c.spec->name + ": " + strerror(errno));
    close(out[0]);
    close(out[1]);
    return false;
  }
  int in[2] = {devnull, -1};
  if (c.spec->stdin_data && pipe2(in, O_CLOEXEC) != 0) {
    Fail(1, "cannot start " + c.spec->name + ": " + strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    return false;
  }
  ExecPlan plan(*c.spec);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) ExecChild(plan, in[0], out[1], err[1], parent, original_mask);
  close(out[1]);
  close(err[1]);
  // The child has its own: ours kept open would queue connections for a
  // scheduler that died, instead of refusing them; unless another is to
  // take them (--elastic), given the same socket.
  if (c.spec->listen_fd >= 0 && pid > 0) {
    if (c.first->replacement)
      kept_listeners_.insert(c.spec->listen_fd);
    else
      close(c.spec->listen_fd);
  }
  if (c.spec->stdin_data) {
    close(in[0]);
    // A few hundred bytes: the pipe takes them without blocking.
    WriteAll(in[1], *c.spec->stdin_data);
    c.stdin_w = in[1];
  }
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    if (c.stdin_w >= 0) close(c.stdin_w);
    c.stdin_w = -1;
    Fail(1, "cannot start " + c.spec->name + ": " + strerror(errno));
    return false;
  }
  // Also set here: a stop that comes before the child's own setpgid must
  // still reach its group.
  setpgid(pid, pid);
  c.pid = pid;
  c.running = true;
  c.fds[0] = out[0];
  c.fds[1] = err[0];
  for (int fd : c.fds) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return true;
}

void Supervisor::CloseStream(Child& c, int stream) {
  std::string text;
  c.prefixers[stream]->Flush(&text);
  Forward(c, text);
  close(c.fds[stream]);
  c.fds[stream] = -1;
}

void Supervisor::Forward(const Child& c, const std::string& text) {
  WriteAll(STDOUT_FILENO, text);
  // The scheduler knows which node ended the job and why; whichever process
  // this launcher sees exit first, the scheduler's word goes in the reason.
  static const std::string kMarker = "aborting the job: ";
  if (!ended_because_.empty() || c.spec->name != "scheduler") return;
  size_t at = text.find(kMarker);
  if (at == std::string::npos) return;
  at += kMarker.size();
  ended_because_ = text.substr(at, text.find('\n', at) - at);
}

void Supervisor::ReadOnce(Child& c, int stream) {
  char buf[65536];
  ssize_t n = read(c.fds[stream], buf, sizeof buf);
  if (n > 0) {
    std::string text;
    c.prefixers[stream]->Feed(buf, static_cast<size_t>(n), &text);
    Forward(c, text);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    CloseStream(c, stream);
  }
}

// Takes what the child wrote before it exited, without waiting on any
// background process of its that may still hold the pipe open.
void Supervisor::Drain(Child& c) {
  constexpr size_t kLimit = 1 << 20;  // a grandchild that never stops writing
  char buf[65536];
  for (int s = 0; s < 2; ++s) {
    size_t total = 0;
    while (c.fds[s] >= 0 && total < kLimit) {
      ssize_t n = read(c.fds[s], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      total += static_cast<size_t>(n);
      std::string text;
      c.prefixers[s]->Feed(buf, static_cast<size_t>(n), &text);
      Forward(c, text);
    }
    if (c.fds[s] >= 0) CloseStream(c, s);
  }
}

void Supervisor::ReapAll() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (auto& c : children_) {
      if (c.running && c.pid == pid) OnChildExit(c, status);
    }
  }
}

void Supervisor::OnChildExit(Child& c, int status) {
  c.running = false;
  if (c.stdin_w >= 0) {
    close(c.stdin_w);
    c.stdin_w = -1;
  }
  Drain(c);
  finishing_ = finishing_ || !Failed(status);
  if (Failed(status) && !stopping_ && !settle_until_ && KeepsTheJob(c, status)) return;
  if (Failed(status)) failures_.push_back({Clock::now(), status, c.Label()});
  // Once stopping, the others dying of our SIGTERM is expected, not news.
  if (stopping_ || settle_until_ || !Failed(status)) return;
  std::string reason = c.Label() + " " + DescribeStatus(status);
  Say(reason);
  outcome_ = {1, reason};
  settle_until_ = Clock::now() + kSettle;
}

bool Supervisor::KeepsTheJob(const Child& c, int status) {
  if (!elastic_.enabled || !c.first->replacement) return false;
  std::string what = c.Label() + " " + DescribeStatus(status);
  if (finishing_) {
    Say(what + "; not started again: the job is finishing");
    return false;
  }
  const std::string& domain = c.first->failure_domain;
  int failures = ++domain_failures_[domain];
  std::string count = std::to_string(failures) + " failure(s) of " + domain + ", --max-restarts " +
                      std::to_string(elastic_.max_restarts);
  if (failures > elastic_.max_restarts) {
    // The job goes on without a worker or server where CARAVAN_MIN_WORKERS
    // allows (the scheduler decides, and ends the job otherwise); not
    // without its scheduler, nor without any worker: the scheduler would
    // wait CARAVAN_RESUME_TIMEOUT for one to come back, and none will.
    bool last_worker = c.first->worker && !WorkerLeft(c);
    Say(what + "; not started again (" + count + ")" +
        (c.first->vital ? ": the job cannot go on without it"
         : last_worker  ? ": no worker is left, and the job cannot go on without one"
                        : ""));
    return !c.first->vital && !last_worker;
  }
  Say(what + "; starting it again, to " +
      (c.first->vital ? "take the job over from its nodes" : "join the job at a regroup") + " (" +
      count + ")");
  to_restart_.push_back(c.first);
  return true;
}

bool Supervisor::WorkerLeft(const Child& gone) const {
  for (const Child& c : children_)
    if (&c != &gone && c.running && c.first->worker) return true;
  for (const ChildSpec* due : to_restart_)
    if (due->worker) return true;
  return false;
}

bool Supervisor::StartBlocked(Child& c, int devnull, const sigset_t& handled) {
  sigset_t original_mask;
  sigprocmask(SIG_BLOCK, &handled, &original_mask);
  bool ok = Start(c, devnull, original_mask);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  return ok;
}

bool Supervisor::StartNew(Child c, int devnull, const sigset_t& handled) {
  children_.push_back(std::move(c));
  return StartBlocked(children_.back(), devnull, handled);
}

void Supervisor::StartNewChildren(int devnull, const sigset_t& handled) {
  std::vector<const ChildSpec*> due;
  due.swap(to_restart_);
  if (stopping_ || settle_until_) return;
  for (const ChildSpec* first : due) {
    if (!StartNew(MakeChild(*first->replacement, *first), devnull, handled)) return;
    ++restarted_;
  }
  if (!elastic_.added || finishing_ || Clock::now() < next_look_) return;
  next_look_ = Clock::now() + kLookForNewChildren;
  for (ChildSpec& spec : elastic_.added()) {
    added_specs_.push_back(std::move(spec));
    const ChildSpec& kept = added_specs_.back();
    if (!StartNew(MakeChild(kept, kept), devnull, handled)) return;
    ++added_;
  }
}

void Supervisor::OnStopSignal(int sig) {
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
  if (!stopping_) {
    Say(std::string("received ") + name);
    Fail(128 + sig, std::string("interrupted by ") + name);
    return;
  }
  // A second signal means the user will not wait out the grace period.
  if (killed_) return;
  killed_ = true;
  for (auto& c : children_) {
    if (!c.running) continue;
    Say("received " + std::string(name) + " again; sending SIGKILL to " + c.Label());
    kill(-c.pid, SIGKILL);
  }
}

void Supervisor::Fail(int exit_code, std::string reason) {
  if (stopping_) return;
  if (!settle_until_) outcome_ = {exit_code, std::move(reason)};  // else a child's failure
  Stop();
}

void Supervisor::Stop() {
  stopping_ = true;
  kill_deadline_ = Clock::now() + kGrace;
  if (!AnyRunning()) return;
  Say("stopping the others");
  for (auto& c : children_) {
    if (c.running) kill(-c.pid, SIGTERM);
  }
}

void Supervisor::CheckDeadlines() {
  auto now = Clock::now();
  if (!stopping_ && timeout_seconds_ > 0 &&
      now - start_ >= std::chrono::duration<double>(timeout_seconds_)) {
    std::string names;
    for (const auto& c : children_) {
      if (!c.running) continue;
      if (!names.empty()) names += ", ";
      names += c.Label();
    }
    char secs[32];
    snprintf(secs, sizeof secs, "%g", timeout_seconds_);
    std::string reason = std::string("timed out after ") + secs + " s";
    Say(reason + "; still running: " + names);
    Fail(1, reason);
  }
  if (settle_until_ && !stopping_ && now >= *settle_until_) Stop();
  if (stopping_ && !killed_ && now >= kill_deadline_) {
    killed_ = true;
    for (auto& c : children_) {
      if (!c.running) continue;
      Say(c.Label() + " still running after SIGTERM; sending SIGKILL");
      kill(-c.pid, SIGKILL);
    }
  }
}

int Supervisor::PollTimeoutMs() const {
  std::optional<Clock::time_point> deadline;
  if (!stopping_ && timeout_seconds_ > 0) {
    deadline = start_ + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(timeout_seconds_));
  } else if (stopping_ && !killed_) {
    deadline = kill_deadline_;
  }
  if (settle_until_ && !stopping_ && (!deadline || *settle_until_ < *deadline))
    deadline = settle_until_;
  if (elastic_.added && !stopping_ && !finishing_ && (!deadline || next_look_ < *deadline))
    deadline = next_look_;
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60 * 60 * 1000));
}

}  // namespace

JobOutcome RunJob(const std::vector<ChildSpec>& children, double timeout_seconds,
                  const Elasticity& elastic) {
  Supervisor s(children, timeout_seconds, elastic);
  return s.Run();
}

}  // namespace caravan::launch
