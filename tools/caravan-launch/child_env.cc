// The environment caravan-launch gives its children.
#include "child_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace caravan::launch {

// The folder this program lies in, with a trailing '/'; empty if unknown.
std::string SelfDir() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string dir(self, static_cast<size_t>(n));
  dir.resize(dir.rfind('/') + 1);
  return dir;
}

// This environment without the variables the launcher sets per child, with
// the build tree's Python packages first on PYTHONPATH when run from one.
std::vector<std::string> InheritedEnv(bool* have_node_host_out) {
  // Set per child below; a stale value inherited from the shell would lie.
  static const std::set<std::string> kManaged = {
      "DMLC_ROLE",         "DMLC_PS_ROOT_URI",         "DMLC_PS_ROOT_PORT",
      "DMLC_NUM_WORKER",   "DMLC_NUM_SERVER",          "DMLC_WORKER_ID",
      "CARAVAN_SERVER_ID", "BYTEPS_FORCE_DISTRIBUTED", "CARAVAN_SCHEDULER_FD"};
  std::vector<std::string> base;
  bool have_node_host = false;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (kManaged.count(key)) continue;
    if (key == "DMLC_NODE_HOST") {
      if (kv.size() == key.size() + 1) continue;  // set but empty counts as unset
      have_node_host = true;
    }
    base.push_back(std::move(kv));
  }
  // In a build tree the Python packages (caravan.torch, byteps.torch) lie in
  // build/python, beside build/bin: put them first on the workers' path, so
  // that `caravan-launch -- python3 train.py` finds the ones of this build.
  // An install puts them in the interpreter's own folder instead.
  std::string packages = SelfDir() + "../python";
  struct stat st;
  if (!SelfDir().empty() && stat((packages + "/caravan/__init__.py").c_str(), &st) == 0) {
    char resolved[PATH_MAX];
    if (realpath(packages.c_str(), resolved)) packages = resolved;
    const char* old = getenv("PYTHONPATH");
    base.erase(
        std::remove_if(base.begin(), base.end(),
                       [](const std::string& kv) { return kv.rfind("PYTHONPATH=", 0) == 0; }),
        base.end());
    base.push_back("PYTHONPATH=" + packages + (old && *old ? ":" + std::string(old) : ""));
  }
  *have_node_host_out = have_node_host;
  return base;
}

// The variables that place a first worker or server (its rank), dropped
// for one started in its place (--elastic): that one is new to the job and
// joins at a regroup, where the rank may be taken.
std::vector<std::string> WithoutIds(std::vector<std::string> env) {
  env.erase(std::remove_if(env.begin(), env.end(),
                           [](const std::string& kv) {
                             return kv.rfind("DMLC_WORKER_ID=", 0) == 0 ||
                                    kv.rfind("CARAVAN_SERVER_ID=", 0) == 0;
                           }),
            env.end());
  return env;
}

// --elastic on this machine: every child but the scheduler gets a
// replacement, and its failures count on their own.
void AddReplacements(std::vector<ChildSpec>& children) {
  for (ChildSpec& c : children) {
    c.vital = c.name == "scheduler";
    auto r = std::make_shared<ChildSpec>(c);
    r->env = WithoutIds(c.env);
    c.failure_domain = c.name;
    c.replacement = std::move(r);
  }
}

// torch.distributed's env:// rendezvous for the workers, as torchrun gives it;
// the user's MASTER_ADDR and MASTER_PORT where set. Rank 0 (worker 0) serves
// torch's store at MASTER_ADDR:MASTER_PORT: a port the OS hands out, not the
// scheduler's port plus one, which another process may hold
// (caravan.torch.distributed falls back to that where no launcher says).
// `master_port` 0: no port of ours.
std::vector<std::string> TorchRendezvous(const std::string& master_addr, int master_port) {
  std::vector<std::string> env;
  const char* addr = getenv("MASTER_ADDR");
  const char* port = getenv("MASTER_PORT");
  env.push_back("MASTER_ADDR=" + (addr && *addr ? std::string(addr) : master_addr));
  if (port && *port)
    env.push_back("MASTER_PORT=" + std::string(port));
  else if (master_port > 0)
    env.push_back("MASTER_PORT=" + std::to_string(master_port));
  return env;
}

}  // namespace caravan::launch
