// caravan-launch: runs a scheduler, M servers and N workers on this machine.
#include <arpa/inet.h>  // ntohs
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "child_env.h"
#include "cluster_env.h"
#include "engine/ipc/segment_names.h"
#include "host_plan.h"
#include "job.h"
#include "options.h"

namespace caravan::launch {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A build tree and an install both put caravan-server beside us, so that
// copy wins over whatever older one PATH might hold.
std::optional<std::string> FindServerBin() {
  std::string self = SelfDir();
  if (!self.empty() && IsExecutableFile(self + "caravan-server")) return self + "caravan-server";
  const char* path = getenv("PATH");
  std::string rest = path ? path : "";
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(':', start);
    if (end == std::string::npos) end = rest.size();
    std::string dir = rest.substr(start, end - start);
    if (dir.empty()) dir = ".";
    if (IsExecutableFile(dir + "/caravan-server")) return dir + "/caravan-server";
    start = end + 1;
  }
  return std::nullopt;
}

// A socket bound to a port the OS picks on `host`; -1 after saying why not.
// `listening`: it listens (the scheduler's, handed down to it); otherwise it
// is closed and only the port is returned in *port.
int BindAnyPort(const std::string& host, bool listening, int* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), "0", &hints, &res);
  if (rc != 0) {
    fprintf(stderr, "caravan-launch: cannot resolve --host '%s': %s\n", host.c_str(),
            gai_strerror(rc));
    return -1;
  }
  int kept = -1, last_errno = 0;
  *port = -1;
  for (addrinfo* ai = res; ai && *port < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && (!listening || listen(fd, 1024) == 0) &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      *port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      if (listening) {
        kept = fd;
        continue;
      }
    } else {
      last_errno = errno;
    }
    close(fd);
  }
  freeaddrinfo(res);
  // Above the standard streams, which each child gets anew.
  if (kept >= 0 && kept <= STDERR_FILENO) {
    int moved = fcntl(kept, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    last_errno = errno;
    close(kept);
    kept = moved;
    if (moved < 0) *port = -1;
  }
  if (*port < 0) {
    fprintf(stderr, "caravan-launch: cannot bind a port on --host '%s': %s\n", host.c_str(),
            strerror(last_errno));
    return -1;
  }
  return listening ? kept : 0;
}

// For a server the child binds itself (torch's store): another process
// could take the port in between, but one the OS just handed out is rarely
// reused that fast. The scheduler's port is not left to that chance.
int PickFreePort(const std::string& host) {
  int port = -1;
  BindAnyPort(host, false, &port);
  return port;
}

// The children of a job: each gets the job's variables and its own.
struct Plan {
  std::vector<std::string> base;
  std::vector<ChildSpec> children;
  void add(std::string name, const std::vector<std::string>& argv, std::vector<std::string> extra) {
    ChildSpec c;
    c.name = std::move(name);
    c.argv = argv;
    c.env = base;
    c.env.insert(c.env.end(), extra.begin(), extra.end());
    c.worker = std::find(extra.begin(), extra.end(), "DMLC_ROLE=worker") != extra.end();
    children.push_back(std::move(c));
  }
};

// `node_host`: DMLC_NODE_HOST for every child unless the user set one ("":
// none, each finds its address).
Plan StartPlan(const std::string& root, int port, int workers, int servers,
               const std::string& node_host) {
  Plan p;
  bool have_node_host = false;
  p.base = InheritedEnv(&have_node_host);
  p.base.push_back("DMLC_PS_ROOT_URI=" + root);
  p.base.push_back("DMLC_PS_ROOT_PORT=" + std::to_string(port));
  p.base.push_back("DMLC_NUM_WORKER=" + std::to_string(workers));
  p.base.push_back("DMLC_NUM_SERVER=" + std::to_string(servers));
  if (!have_node_host && !node_host.empty()) p.base.push_back("DMLC_NODE_HOST=" + node_host);
  return p;
}

// `listen_fd`: the scheduler's socket, listening on `port`.
std::vector<ChildSpec> PlanJob(const Options& o, const std::string& server_bin, int port,
                               int listen_fd) {
  Plan plan = StartPlan(o.host, port, o.workers, o.servers, o.host);
  // The scheduler's port stays bound, so the OS cannot hand it out here.
  int master_port = PickFreePort(o.host);
  const std::vector<std::string> torch = TorchRendezvous(o.host, master_port);
  std::vector<std::string> server_argv = o.spmd ? o.command : std::vector<std::string>{server_bin};
  auto add = [&plan](std::string name, const std::vector<std::string>& argv,
                     std::vector<std::string> extra) {
    plan.add(std::move(name), argv, std::move(extra));
  };
  add("scheduler", server_argv,
      {"DMLC_ROLE=scheduler", "CARAVAN_SCHEDULER_FD=" + std::to_string(kInheritedListenFd)});
  plan.children.back().listen_fd = listen_fd;
  for (int j = 0; j < o.servers; ++j) {
    add("server " + std::to_string(j), server_argv,
        {"DMLC_ROLE=server", "CARAVAN_SERVER_ID=" + std::to_string(j)});
  }
  for (int i = 0; i < o.workers; ++i) {
    // The launcher starts a scheduler and servers, so even a single worker
    // must use them instead of summing alone.
    std::vector<std::string> extra = {"DMLC_ROLE=worker", "DMLC_WORKER_ID=" + std::to_string(i),
                                      "BYTEPS_FORCE_DISTRIBUTED=1"};
    extra.insert(extra.end(), torch.begin(), torch.end());
    add("worker " + std::to_string(i), o.command, extra);
  }
  return plan.children;
}

// --from-env: this process's part of the job (docs/cluster-launch.md).
// Exits 2 naming the variable at fault when the job cannot be placed.
std::vector<ChildSpec> PlanFromEnv(const Options& o, const std::string& server_bin) {
  ClusterPlace place;
  try {
    place = read_cluster_env(o.from_env, [](const char* n) { return getenv(n); });
  } catch (const std::exception& e) {
    UsageError(e.what());
  }
  auto number_var = [](const char* name, long max, const char* what) -> int {
    const char* v = getenv(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > max) UsageError(std::string(name) + "='" + v + "' is not " + what);
    return static_cast<int>(n);
  };
  int servers = number_var("DMLC_NUM_SERVER", kMaxProcesses, "a count");
  if (servers < 0) {
    if (place.hosts < 1)
      UsageError("--from-env " + place.manager + " (" + place.source +
                 "): cannot tell how many hosts the job has; set DMLC_NUM_SERVER");
    servers = place.hosts;  // one server per host
  }
  if (servers < 1 || servers >= place.size)
    UsageError("--from-env " + place.manager + ": DMLC_NUM_SERVER=" + std::to_string(servers) +
               " with " + std::to_string(place.size) +
               " processes leaves no worker: start more processes or set fewer servers");
  int workers = place.size - servers;
  std::string root = getenv("DMLC_PS_ROOT_URI") && *getenv("DMLC_PS_ROOT_URI")
                         ? getenv("DMLC_PS_ROOT_URI")
                         : place.root_host;
  if (root.empty()) {
    if (place.hosts != 1)
      UsageError("--from-env " + place.manager + " (" + place.source +
                 "): set DMLC_PS_ROOT_URI to the address of rank 0's host, where the scheduler "
                 "runs (with mpirun: -x DMLC_PS_ROOT_URI=HOST)");
    root = "127.0.0.1";  // every rank on this host
  }
  int port = number_var("DMLC_PS_ROOT_PORT", 65535, "a port");
  if (port <= 0) port = place.root_port > 0 ? place.root_port : kFromEnvDefaultPort;

  Plan plan = StartPlan(root, port, workers, servers, place.hosts == 1 ? "127.0.0.1" : "");
  std::vector<std::string> server_argv = o.spmd ? o.command : std::vector<std::string>{server_bin};
  auto add = [&plan](std::string name, const std::vector<std::string>& argv,
                     std::vector<std::string> extra) {
    plan.add(std::move(name), argv, std::move(extra));
  };
  std::string role;
  if (place.rank == 0) add("scheduler", server_argv, {"DMLC_ROLE=scheduler"});
  if (place.rank < servers) {
    role = "server " + std::to_string(place.rank);
    add(role, server_argv, {"DMLC_ROLE=server", "CARAVAN_SERVER_ID=" + std::to_string(place.rank)});
  } else {
    int id = place.rank - servers;
    role = "worker " + std::to_string(id);
    add(role, o.command,
        {"DMLC_ROLE=worker", "DMLC_WORKER_ID=" + std::to_string(id), "BYTEPS_FORCE_DISTRIBUTED=1"});
  }
  fprintf(stderr,
          "caravan-launch: %s (%s): %s%s of %d workers and %d servers, scheduler at %s:%d\n",
          place.manager.c_str(), place.source.c_str(), role.c_str(),
          place.rank == 0 ? " and the scheduler" : "", workers, servers, root.c_str(), port);
  return plan.children;
}

int Main(int argc, char** argv) {
  // Pipes made later must not land on 0-2, where dup2 in the child would be
  // a no-op that leaves close-on-exec set.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }
  Options o = ParseArgs(argc, argv);
  std::string server_bin = o.server_bin;
  if (!o.spmd && server_bin.empty()) {
    auto found = FindServerBin();
    if (!found) {
      UsageError(
          "cannot find caravan-server beside caravan-launch or on PATH; "
          "give --server-bin PATH, or --spmd if COMMAND plays every role");
    }
    server_bin = *found;
  }
  Elasticity elastic{o.elastic, o.max_restarts, nullptr};
  if (o.elastic) {
    // Every child's, and with --hostfile every remote one's (CARAVAN_*).
    setenv("CARAVAN_ELASTIC", "1", 1);
    if (o.min_workers) setenv("CARAVAN_MIN_WORKERS", std::to_string(o.min_workers).c_str(), 1);
    if (o.max_workers) setenv("CARAVAN_MAX_WORKERS", std::to_string(o.max_workers).c_str(), 1);
  }
  // ", all exited 0" or ", 2 process(es) started again (--elastic), and all
  // exited 0".
  auto ended_well = [&o](const JobOutcome& out) {
    std::string more;
    if (out.restarts) more += ", " + std::to_string(out.restarts) + " process(es) started again";
    if (out.added)
      more += ", " + std::to_string(out.added) +
              (o.hostfile.empty() ? " added by the host discovery script"
                                  : " added from the host file");
    return more.empty() ? std::string(", all exited 0") : more + " (--elastic), and all exited 0";
  };
  if (!o.hostfile.empty() || !o.discovery.empty()) {
    HostPlan plan(o, server_bin);
    std::vector<ChildSpec> children = plan.Start();
    if (o.elastic) elastic.added = [&plan] { return plan.Added(); };
    JobOutcome out = RunJob(children, o.timeout, elastic);
    if (out.exit_code == 0)
      fprintf(stderr, "caravan-launch: job finished: %s%s\n", plan.Summary().c_str(),
              ended_well(out).c_str());
    else
      fprintf(stderr, "caravan-launch: job failed: %s\n", out.reason.c_str());
    return out.exit_code;
  }
  if (!o.from_env.empty()) {
    std::vector<ChildSpec> children = PlanFromEnv(o, server_bin);
    if (o.elastic) AddReplacements(children);
    JobOutcome out = RunJob(children, o.timeout, elastic);
    if (out.exit_code != 0) fprintf(stderr, "caravan-launch: failed: %s\n", out.reason.c_str());
    return out.exit_code;
  }
  int port = -1;
  int listen_fd = BindAnyPort(o.host, true, &port);
  if (listen_fd < 0) return 1;

  std::vector<ChildSpec> children = PlanJob(o, server_bin, port, listen_fd);
  if (o.elastic) AddReplacements(children);
  JobOutcome out = RunJob(children, o.timeout, elastic);
  // BYTEPS_ENABLE_IPC: a worker that died between making a shared-memory
  // segment and its server mapping it left the name, and a server stopped
  // by us could not remove it.
  if (size_t n = ipc::remove_segments(ipc::job_prefix(o.host, port))) {
    fprintf(stderr,
            "caravan-launch: removed %zu shared-memory segment(s) of this job from /dev/shm\n", n);
  }
  if (out.exit_code == 0) {
    fprintf(stderr, "caravan-launch: job finished: %d workers, %d servers%s\n", o.workers,
            o.servers, ended_well(out).c_str());
  } else {
    fprintf(stderr, "caravan-launch: job failed: %s\n", out.reason.c_str());
  }
  return out.exit_code;
}

}  // namespace
}  // namespace caravan::launch

int main(int argc, char** argv) { return caravan::launch::Main(argc, argv); }
