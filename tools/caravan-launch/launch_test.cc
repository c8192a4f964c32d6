// Runs the real caravan-launch binary and checks what a user would see.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Far above anything a passing test needs; only bounds a broken launcher.
constexpr auto kHangLimit = std::chrono::seconds(45);

class Launcher {
 public:
  Launcher(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
    std::vector<std::string> all = {CARAVAN_LAUNCH_BIN};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    start_ = Clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      dup2(out[1], 1);
      dup2(err[1], 2);
      execv(argv[0], argv.data());
      _exit(126);
    }
    close(out[1]);
    close(err[1]);
    fds_[0] = out[0];
    fds_[1] = err[0];
  }

  ~Launcher() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }

  // Reads until done(stdout) holds or both streams end; false on a hang.
  bool ReadUntil(const std::function<bool(const std::string&)>& done) {
    auto deadline = start_ + kHangLimit;
    while (!done(out_) && (fds_[0] >= 0 || fds_[1] >= 0)) {
      pollfd p[2] = {{fds_[0], POLLIN, 0}, {fds_[1], POLLIN, 0}};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      if (poll(p, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) return false;
      for (int s = 0; s < 2; ++s) {
        if (fds_[s] < 0 || !p[s].revents) continue;
        char buf[4096];
        ssize_t n = read(fds_[s], buf, sizeof buf);
        if (n > 0) {
          (s == 0 ? out_ : err_).append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds_[s]);
          fds_[s] = -1;
        }
      }
    }
    return true;
  }

  // Waits for the launcher to exit; returns its exit code (128+N on signal N).
  int Wait() {
    bool finished = ReadUntil([](const std::string&) { return false; });
    if (!finished) {
      ADD_FAILURE() << "caravan-launch still running after " << kHangLimit.count()
                    << " s\nstdout:\n"
                    << out_ << "\nstderr:\n"
                    << err_;
      kill(pid_, SIGKILL);
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    seconds_ = std::chrono::duration<double>(Clock::now() - start_).count();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  pid_t pid() const { return pid_; }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  double seconds() const { return seconds_; }

 private:
  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};
  std::string out_, err_;
  Clock::time_point start_;
  double seconds_ = 0;
};

size_t Count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

std::string Dump(const Launcher& l) { return "stdout:\n" + l.out() + "\nstderr:\n" + l.err(); }

TEST(Launch, EveryRoleGetsItsPrefixAndEnvironment) {
  Launcher l({"--spmd", "--workers", "3", "--servers", "2", "--", "sh", "-c",
              "echo \"$DMLC_ROLE|${DMLC_WORKER_ID-none}|${CARAVAN_SERVER_ID-none}|"
              "$DMLC_NUM_WORKER|$DMLC_NUM_SERVER|$DMLC_PS_ROOT_URI|$DMLC_NODE_HOST|"
              "$BYTEPS_PASS_THROUGH|$DMLC_PS_ROOT_PORT\""},
             {"BYTEPS_PASS_THROUGH=kept", "DMLC_WORKER_ID=99", "DMLC_ROLE=stale"});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  const std::string common = "|3|2|127.0.0.1|127.0.0.1|kept|";
  std::vector<std::string> expected = {"[scheduler] scheduler|none|none" + common,
                                       "[server 0] server|none|0" + common,
                                       "[server 1] server|none|1" + common};
  for (int i = 0; i < 3; ++i) {
    expected.push_back("[worker " + std::to_string(i) + "] worker|" + std::to_string(i) + "|none" +
                       common);
  }
  for (const auto& e : expected) EXPECT_EQ(Count(l.out(), e), 1u) << e << "\n" << Dump(l);

  // Every process must be told the same scheduler port.
  std::set<std::string> ports;
  std::regex port_re("\\|([0-9]+)\n");
  for (std::sregex_iterator it(l.out().begin(), l.out().end(), port_re), end; it != end; ++it) {
    ports.insert((*it)[1]);
  }
  ASSERT_EQ(ports.size(), 1u) << Dump(l);
  int port = std::stoi(*ports.begin());
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_NE(l.err().find("caravan-launch: job finished: 3 workers, 2 servers, all exited 0"),
            std::string::npos)
      << Dump(l);
}

// The launcher binds the scheduler's port and hands the listening socket
// down: a port released for the scheduler to bind again was taken once by
// another process's connect() in between ("cannot listen on
// 0.0.0.0:40127: Address already in use"). So the port is held while the
// scheduler starts, by the socket it gets, and no other role gets one.
TEST(Launch, TheSchedulerGetsItsPortAlreadyListening) {
  const char* probe =
      "import errno, os, socket\n"
      "port = int(os.environ['DMLC_PS_ROOT_PORT'])\n"
      "fd = os.environ.get('CARAVAN_SCHEDULER_FD')\n"
      "print('probe', os.environ['DMLC_ROLE'], fd)\n"
      "if fd is not None:\n"
      "    s = socket.socket()\n"
      "    try:\n"
      "        s.bind(('127.0.0.1', port))\n"
      "        print('port free')\n"
      "    except OSError as e:\n"
      "        print('port held' if e.errno == errno.EADDRINUSE else e)\n"
      "    l = socket.socket(fileno=int(fd))\n"
      "    print('listening', l.getsockname()[1] == port,\n"
      "          l.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN))\n"
      "    l.detach()\n";
  Launcher l({"--spmd", "--workers", "1", "--servers", "1", "--", "python3", "-c", probe},
             {"CARAVAN_SCHEDULER_FD=7"});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  EXPECT_EQ(Count(l.out(), "[scheduler] probe scheduler 3\n"), 1u) << Dump(l);
  EXPECT_EQ(Count(l.out(), "[scheduler] port held\n"), 1u) << Dump(l);
  EXPECT_EQ(Count(l.out(), "[scheduler] listening True 1\n"), 1u) << Dump(l);
  EXPECT_EQ(Count(l.out(), "[server 0] probe server None\n"), 1u) << Dump(l);
  EXPECT_EQ(Count(l.out(), "[worker 0] probe worker None\n"), 1u) << Dump(l);
}

// torch's env:// rendezvous: every worker, and only workers, told the same
// MASTER_ADDR and a MASTER_PORT the OS handed out (not the scheduler's plus
// one, which another process may hold); the user's own values win.
TEST(Launch, WorkersGetTorchsRendezvous) {
  Launcher l({"--spmd", "--workers", "2", "--servers", "1", "--", "sh", "-c",
              "echo \"rdv $DMLC_ROLE ${MASTER_ADDR-none} ${MASTER_PORT-none} $DMLC_PS_ROOT_PORT\""},
             {});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  std::regex worker_re("worker 127\\.0\\.0\\.1 ([0-9]+) ([0-9]+)\n");
  std::set<std::string> ports;
  for (std::sregex_iterator it(l.out().begin(), l.out().end(), worker_re), end; it != end; ++it) {
    ports.insert((*it)[1]);
    EXPECT_NE((*it)[1], (*it)[2]) << "MASTER_PORT is the scheduler's port\n" << Dump(l);
  }
  EXPECT_EQ(ports.size(), 1u) << "both workers, one port\n" << Dump(l);
  EXPECT_EQ(Count(l.out(), "rdv scheduler none none"), 1u) << Dump(l);
  EXPECT_EQ(Count(l.out(), "rdv server none none"), 1u) << Dump(l);

  Launcher own({"--spmd", "--workers", "1", "--servers", "1", "--", "sh", "-c",
                "echo \"rdv $DMLC_ROLE $MASTER_ADDR $MASTER_PORT\""},
               {"MASTER_ADDR=127.0.0.1", "MASTER_PORT=1234"});
  ASSERT_EQ(own.Wait(), 0) << Dump(own);
  EXPECT_EQ(Count(own.out(), "rdv worker 127.0.0.1 1234\n"), 1u) << Dump(own);
}

TEST(Launch, NodeHostFromEnvironmentWins) {
  Launcher l({"--spmd", "--", "sh", "-c", "echo host=$DMLC_NODE_HOST"},
             {"DMLC_NODE_HOST=10.1.2.3"});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  EXPECT_EQ(Count(l.out(), "host=10.1.2.3\n"), 3u) << Dump(l);
}

// From a build tree, `caravan-launch -- python3 train.py` imports the tree's
// own caravan.torch/byteps.torch: build/python goes first on PYTHONPATH.
TEST(Launch, BuildTreePythonPackagesGoFirstOnPythonPath) {
  std::string launcher = CARAVAN_LAUNCH_BIN;
  std::string packages = launcher.substr(0, launcher.rfind('/')) + "/../python";
  char resolved[PATH_MAX];
  struct stat st;
  if (!realpath(packages.c_str(), resolved) ||
      stat((packages + "/caravan/__init__.py").c_str(), &st) != 0)
    GTEST_SKIP() << "no Python packages in this build tree (" << packages << ")";
  Launcher l({"--spmd", "--", "sh", "-c", "echo pythonpath=$PYTHONPATH"},
             {"PYTHONPATH=/users/own"});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  EXPECT_EQ(Count(l.out(), "pythonpath=" + std::string(resolved) + ":/users/own\n"), 3u) << Dump(l);
}

TEST(Launch, ServerBinRunsSchedulerAndServers) {
  char path[] = "/tmp/caravan-launch-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string script = "#!/bin/sh\necho \"server-bin $DMLC_ROLE ${CARAVAN_SERVER_ID-}\"\n";
  ASSERT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  chmod(path, 0700);
  Launcher l({"--servers", "2", "--server-bin", path, "--", "sh", "-c",
              "echo \"command $DMLC_ROLE $DMLC_WORKER_ID\""});
  int code = l.Wait();
  unlink(path);
  ASSERT_EQ(code, 0) << Dump(l);
  EXPECT_NE(l.out().find("[scheduler] server-bin scheduler \n"), std::string::npos) << Dump(l);
  EXPECT_NE(l.out().find("[server 1] server-bin server 1\n"), std::string::npos) << Dump(l);
  EXPECT_NE(l.out().find("[worker 0] command worker 0\n"), std::string::npos) << Dump(l);
}

TEST(Launch, FailingWorkerStopsTheOthers) {
  Launcher l({"--spmd", "--workers", "3", "--", "sh", "-c",
              "if [ \"$DMLC_WORKER_ID\" = 1 ]; then echo failing; exit 3; fi; exec sleep 60"});
  int code = l.Wait();
  EXPECT_EQ(code, 1) << Dump(l);
  EXPECT_LT(l.seconds(), 20) << Dump(l);
  EXPECT_NE(l.out().find("[worker 1] failing\n"), std::string::npos) << Dump(l);
  std::regex named("caravan-launch: worker 1 \\(pid [0-9]+\\) exited with status 3\n");
  EXPECT_TRUE(std::regex_search(l.err(), named)) << Dump(l);
  EXPECT_NE(l.err().find("caravan-launch: stopping the others"), std::string::npos) << Dump(l);
  EXPECT_NE(l.err().find("caravan-launch: job failed: worker 1"), std::string::npos) << Dump(l);
}

// The scheduler exits as soon as it loses a node, often before that node's
// process is reaped: the job's reason carries the scheduler's own words.
TEST(Launch, TheSchedulersReasonIsInTheJobsReason) {
  Launcher l({"--spmd", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = scheduler ]; then echo '[caravan E 1 scheduler] aborting the "
              "job: lost worker 1 (pid 42 at 10.0.0.2)' >&2; exit 1; fi; exec sleep 60"});
  EXPECT_EQ(l.Wait(), 1) << Dump(l);
  std::regex named(
      "caravan-launch: job failed: scheduler \\(pid [0-9]+\\) exited with status 1; the scheduler "
      "ended the job: lost worker 1 \\(pid 42 at 10.0.0.2\\)\n");
  EXPECT_TRUE(std::regex_search(l.err(), named)) << Dump(l);
}

TEST(Launch, DeathBySignalIsNamed) {
  Launcher l({"--spmd", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = server ]; then kill -9 $$; fi; exec sleep 60"});
  EXPECT_EQ(l.Wait(), 1) << Dump(l);
  std::regex named("server 0 \\(pid [0-9]+\\) killed by signal 9 \\(Killed\\)");
  EXPECT_TRUE(std::regex_search(l.err(), named)) << Dump(l);
  EXPECT_LT(l.seconds(), 20) << Dump(l);
}

TEST(Launch, CommandThatCannotRun) {
  Launcher l({"--spmd", "--", "/nonexistent/caravan-no-such-program", "arg"});
  EXPECT_NE(l.Wait(), 0) << Dump(l);
  EXPECT_NE(l.out().find("caravan-launch: cannot execute '/nonexistent/caravan-no-such-program': "
                         "No such file or directory"),
            std::string::npos)
      << Dump(l);
  EXPECT_NE(l.err().find("exited with status 127"), std::string::npos) << Dump(l);
}

TEST(Launch, TimeoutStopsAHungJob) {
  Launcher l({"--spmd", "--timeout", "1", "--", "sh", "-c", "exec sleep 60"});
  EXPECT_EQ(l.Wait(), 1) << Dump(l);
  EXPECT_LT(l.seconds(), 20) << Dump(l);
  EXPECT_NE(l.err().find("timed out after 1 s; still running: scheduler (pid "), std::string::npos)
      << Dump(l);
  EXPECT_NE(l.err().find("worker 0 (pid "), std::string::npos) << Dump(l);
}

TEST(Launch, PartialLastLinesArePrinted) {
  Launcher l({"--spmd", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = worker ]; then printf 'one\\ntw'; printf 'o\\nno newline';"
              " printf 'err tail' >&2; fi"});
  ASSERT_EQ(l.Wait(), 0) << Dump(l);
  EXPECT_NE(l.out().find("[worker 0] one\n[worker 0] two\n"), std::string::npos) << Dump(l);
  EXPECT_NE(l.out().find("[worker 0] no newline\n"), std::string::npos) << Dump(l);
  EXPECT_NE(l.out().find("[worker 0] err tail\n"), std::string::npos) << Dump(l);
}

TEST(Launch, SigtermIsForwardedToEveryProcess) {
  Launcher l({"--spmd", "--workers", "2", "--", "sh", "-c", "echo ready $$; exec sleep 60"});
  ASSERT_TRUE(l.ReadUntil([](const std::string& out) { return Count(out, "ready") == 4; }))
      << Dump(l);
  std::vector<pid_t> pids;
  std::regex ready("ready ([0-9]+)");
  for (std::sregex_iterator it(l.out().begin(), l.out().end(), ready), end; it != end; ++it) {
    pids.push_back(std::stoi((*it)[1]));
  }
  ASSERT_EQ(pids.size(), 4u);
  kill(l.pid(), SIGTERM);
  EXPECT_EQ(l.Wait(), 143) << Dump(l);
  EXPECT_LT(l.seconds(), 20) << Dump(l);
  // The launcher reaps every child before it exits, so none may remain.
  for (pid_t p : pids) EXPECT_NE(kill(p, 0), 0) << "pid " << p << " survived\n" << Dump(l);
}

TEST(Launch, ChildIgnoringSigtermIsKilledAfterGrace) {
  Launcher l({"--spmd", "--", "sh", "-c", "trap '' TERM; echo ready; exec sleep 60"});
  ASSERT_TRUE(l.ReadUntil([](const std::string& out) { return Count(out, "ready") == 3; }))
      << Dump(l);
  auto signalled = Clock::now();
  kill(l.pid(), SIGINT);
  EXPECT_EQ(l.Wait(), 130) << Dump(l);
  double waited = std::chrono::duration<double>(Clock::now() - signalled).count();
  EXPECT_GT(waited, 4.0) << Dump(l);
  EXPECT_LT(waited, 20) << Dump(l);
  EXPECT_NE(l.err().find("still running after SIGTERM; sending SIGKILL"), std::string::npos)
      << Dump(l);
}

// --elastic: a worker that fails is started again without the id that
// placed the first (it joins at a regroup), with CARAVAN_ELASTIC and the
// bounds set; the job goes on and ends cleanly. The others end once the
// replacement has run (a file it makes), so none ends before it starts.
TEST(Launch, ElasticStartsAFailedWorkerAgainWithoutItsId) {
  std::string done = ::testing::TempDir() + "caravan_elastic_" + std::to_string(getpid());
  unlink(done.c_str());
  Launcher l({"--elastic", "--min-workers", "1", "--max-workers", "4", "--spmd", "--workers", "2",
              "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = worker ] && [ \"$DMLC_WORKER_ID\" = 1 ]; then exit 3; fi; "
              "if [ \"$DMLC_ROLE\" = worker ] && [ -z \"$DMLC_WORKER_ID\" ]; then "
              "echo \"again: $CARAVAN_ELASTIC $CARAVAN_MIN_WORKERS $CARAVAN_MAX_WORKERS\"; "
              "touch " +
                  done +
                  "; exit 0; fi; "
                  "while [ ! -e " +
                  done + " ]; do sleep 0.05; done"});
  EXPECT_EQ(l.Wait(), 0) << Dump(l);
  unlink(done.c_str());
  std::regex again(
      "caravan-launch: worker 1 \\(pid [0-9]+\\) exited with status 3; starting it again, to "
      "join the job at a regroup \\(1 failure\\(s\\) of worker 1, --max-restarts 3\\)\n");
  EXPECT_TRUE(std::regex_search(l.err(), again)) << Dump(l);
  EXPECT_NE(l.out().find("[worker 1] again: 1 1 4\n"), std::string::npos) << Dump(l);
  EXPECT_NE(l.err().find("job finished: 2 workers, 1 servers, 1 process(es) started again "
                         "(--elastic), and all exited 0"),
            std::string::npos)
      << Dump(l);
}

// After --max-restarts failures a process is not started again, and the
// launcher leaves the job to the engine (which ends it when too few
// workers are left): here the others end cleanly once told.
TEST(Launch, ElasticGivesUpOnAProcessThatKeepsFailing) {
  std::string done = ::testing::TempDir() + "caravan_elastic_give_up_" + std::to_string(getpid());
  unlink(done.c_str());
  Launcher l({"--elastic", "--max-restarts", "2", "--spmd", "--workers", "2", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = worker ] && [ \"$DMLC_WORKER_ID\" != 0 ]; then exit 3; fi; "
              "while [ ! -e " +
                  done + " ]; do sleep 0.05; done"});
  const std::string gave_up =
      "exited with status 3; not started again (3 failure(s) of worker 1, --max-restarts 2)\n";
  ASSERT_TRUE(l.ReadUntil([&](const std::string&) {
    return l.err().find(gave_up) != std::string::npos;
  })) << Dump(l);
  std::ofstream(done) << "done\n";
  EXPECT_EQ(l.Wait(), 0) << Dump(l);
  unlink(done.c_str());
  EXPECT_EQ(Count(l.err(), "starting it again"), 2u) << Dump(l);
  EXPECT_NE(l.err().find("2 process(es) started again"), std::string::npos) << Dump(l);
}

// The scheduler is started again too (the new one takes the job over
// from its nodes); past --max-restarts its failure ends the job, which
// cannot go on without one.
TEST(Launch, ElasticEndsTheJobWhenTheSchedulerKeepsFailing) {
  Launcher l({"--elastic", "--max-restarts", "1", "--spmd", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = scheduler ]; then exit 4; fi; exec sleep 60"});
  EXPECT_EQ(l.Wait(), 1) << Dump(l);
  EXPECT_EQ(Count(l.err(), "starting it again, to take the job over from its nodes"), 1u)
      << Dump(l);
  EXPECT_NE(l.err().find("not started again (2 failure(s) of scheduler, --max-restarts 1): the "
                         "job cannot go on without it"),
            std::string::npos)
      << Dump(l);
  EXPECT_NE(l.err().find("job failed: scheduler"), std::string::npos) << Dump(l);
}

// Every worker failing past --max-restarts (a script that cannot start)
// ends the job: the scheduler and servers, which would wait
// CARAVAN_RESUME_TIMEOUT for a worker to come back, are stopped.
TEST(Launch, ElasticEndsTheJobWhenNoWorkerIsLeft) {
  Launcher l({"--elastic", "--max-restarts", "1", "--spmd", "--workers", "2", "--", "sh", "-c",
              "if [ \"$DMLC_ROLE\" = worker ]; then exit 5; fi; exec sleep 60"});
  EXPECT_EQ(l.Wait(), 1) << Dump(l);
  EXPECT_EQ(Count(l.err(), "starting it again, to join the job at a regroup"), 2u) << Dump(l);
  EXPECT_EQ(Count(l.err(), "no worker is left, and the job cannot go on without one"), 1u)
      << Dump(l);
  EXPECT_NE(l.err().find("job failed: worker"), std::string::npos) << Dump(l);
}

struct BadArgs {
  std::vector<std::string> args;
  std::vector<std::string> mentions;
};

class LaunchBadOptions : public testing::TestWithParam<BadArgs> {};

TEST_P(LaunchBadOptions, ExitTwoNamingTheProblem) {
  Launcher l(GetParam().args);
  EXPECT_EQ(l.Wait(), 2) << Dump(l);
  for (const auto& m : GetParam().mentions) {
    EXPECT_NE(l.err().find(m), std::string::npos) << m << "\n" << Dump(l);
  }
  EXPECT_EQ(l.out(), "");
}

INSTANTIATE_TEST_SUITE_P(
    Launch, LaunchBadOptions,
    testing::Values(
        BadArgs{{"--workers", "abc", "--", "true"}, {"--workers", "'abc'"}},
        BadArgs{{"--workers", "0", "--", "true"}, {"--workers", "'0'"}},
        BadArgs{{"--workers=-2", "--", "true"}, {"--workers", "'-2'"}},
        BadArgs{{"--servers", "0", "--spmd", "--", "true"}, {"--servers", "'0'"}},
        BadArgs{{"--timeout", "soon", "--", "true"}, {"--timeout", "'soon'"}},
        BadArgs{{"--workers"}, {"--workers", "needs a value"}},
        BadArgs{{"--frobnicate", "--", "true"}, {"--frobnicate"}},
        BadArgs{{"--spmd", "true"}, {"'true'", "--"}}, BadArgs{{"--spmd"}, {"missing", "COMMAND"}},
        BadArgs{{"--spmd", "--"}, {"missing COMMAND"}},
        BadArgs{{"--min-workers", "2", "--", "true"}, {"--min-workers needs --elastic"}},
        BadArgs{{"--elastic", "--min-workers", "3", "--max-workers", "2", "--", "true"},
                {"--min-workers 3 is more than --max-workers 2"}},
        BadArgs{{"--elastic", "--max-restarts", "-1", "--", "true"}, {"--max-restarts", "'-1'"}},
        BadArgs{{"--host-discovery-script", "echo h1", "--", "true"},
                {"--host-discovery-script needs --elastic"}},
        BadArgs{{"--elastic", "--host-discovery-script", "echo h1", "--hostfile", "hosts", "--",
                 "true"},
                {"--host-discovery-script and --hostfile are two ways"}},
        // The script runs before anything starts: what is wrong with it
        // ends the launch.
        BadArgs{{"--elastic", "--host-discovery-script", "echo h1; exit 3", "--", "true"},
                {"--host-discovery-script 'echo h1; exit 3': exited with status 3"}},
        BadArgs{
            {"--elastic", "--host-discovery-script", "echo h1:many", "--", "true"},
            {"the output of --host-discovery-script 'echo h1:many':1: slots=many is not a count"}},
        BadArgs{{"--elastic", "--host-discovery-script", "true", "--", "true"},
                {"--host-discovery-script 'true': no host in it"}}));

TEST(Launch, HelpGoesToStdout) {
  Launcher l({"--help"});
  EXPECT_EQ(l.Wait(), 0);
  EXPECT_NE(l.out().find("usage: caravan-launch"), std::string::npos);
}

}  // namespace
