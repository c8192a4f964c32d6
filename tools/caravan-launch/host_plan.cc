#include "host_plan.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "child_env.h"
#include "host_discovery.h"

extern char** environ;

namespace caravan::launch {

HostPlan::HostPlan(const Options& o, const std::string& server_bin) : o_(o) {
  try {
    hosts_ = *ListedIfChanged();
  } catch (const std::exception& e) {
    UsageError(e.what());
  }
  int workers = 0, servers = 0;
  for (auto& h : hosts_) {
    workers += h.slots;
    servers += h.servers;
  }
  const char* root_env = getenv("DMLC_PS_ROOT_URI");
  root_ = root_env && *root_env ? root_env : host_address(hosts_[0]);
  const char* port_env = getenv("DMLC_PS_ROOT_PORT");
  port_ = port_env && *port_env ? port_env : std::to_string(kFromEnvDefaultPort);
  char* port_end = nullptr;
  long port_value = strtol(port_.c_str(), &port_end, 10);
  if (*port_end || port_value < 1 || port_value > 65535)
    UsageError("DMLC_PS_ROOT_PORT=" + port_ + " is not a port");

  // What goes to every remote process: the job's variables and this shell's
  // settings for Caravan, BytePS and ps-lite, and the search paths. The job
  // token goes on stdin, never on a command line.
  for (const std::string& kv : InheritedEnv(&have_node_host_)) {
    std::string key = kv.substr(0, kv.find('='));
    if (key == "CARAVAN_JOB_TOKEN") continue;
    bool ours = key.rfind("DMLC_", 0) == 0 || key.rfind("BYTEPS_", 0) == 0 ||
                key.rfind("PS_", 0) == 0 || key.rfind("CARAVAN_", 0) == 0;
    if (ours || key == "PATH" || key == "PYTHONPATH" || key == "LD_LIBRARY_PATH")
      forward_.push_back(kv);
  }
  forward_.push_back("DMLC_PS_ROOT_URI=" + root_);
  forward_.push_back("DMLC_PS_ROOT_PORT=" + port_);
  forward_.push_back("DMLC_NUM_WORKER=" + std::to_string(workers));
  forward_.push_back("DMLC_NUM_SERVER=" + std::to_string(servers));
  const char* token = getenv("CARAVAN_JOB_TOKEN");
  stdin_line_ = std::string(token ? token : "") + "\n";
  char cwd[PATH_MAX];
  dir_ = getcwd(cwd, sizeof cwd) ? cwd : "/";
  std::istringstream words(o.ssh);
  for (std::string w; words >> w;) ssh_.push_back(w);
  server_argv_ = o.spmd ? o.command : std::vector<std::string>{server_bin};
  // Worker 0 serves torch's store: on the first host with worker slots,
  // which need not be the scheduler's (a remote host's free port is not
  // known here: the port stays caravan.torch.distributed's choice).
  for (const HostEntry& h : hosts_)
    if (h.slots > 0 && torch_.empty()) torch_ = TorchRendezvous(host_address(h), 0);
}

ChildSpec HostPlan::Make(const HostEntry& h, const std::string& name,
                         const std::vector<std::string>& argv,
                         const std::vector<std::string>& extra) const {
  std::vector<std::string> env = forward_;
  // A node advertises the address its line gives when that is an IPv4
  // address (else it finds its own: DMLC_INTERFACE).
  in_addr ip{};
  if (!have_node_host_ && inet_pton(AF_INET, host_address(h).c_str(), &ip) == 1)
    env.push_back("DMLC_NODE_HOST=" + host_address(h));
  env.insert(env.end(), extra.begin(), extra.end());
  ChildSpec c;
  c.name = name + " on " + host_address(h);
  c.argv = ssh_;
  for (const char* opt : {"-o", "BatchMode=yes", "-o", "ConnectTimeout=20"}) c.argv.push_back(opt);
  c.argv.push_back(h.host);
  c.argv.push_back(remote_command(env, argv, dir_));
  for (char** e = environ; *e; ++e) c.env.push_back(*e);
  c.stdin_data = stdin_line_;
  return c;
}

void HostPlan::Add(const HostEntry& h, const std::string& name,
                   const std::vector<std::string>& argv, const std::vector<std::string>& extra,
                   std::vector<ChildSpec>* out) const {
  out->push_back(Make(h, name, argv, extra));
  // --elastic: failures count against the host; the scheduler started
  // again there binds the job's port itself.
  if (!o_.elastic) return;
  out->back().replacement = std::make_shared<ChildSpec>(Make(h, name, argv, WithoutIds(extra)));
  out->back().failure_domain = "host " + h.host;
  out->back().vital = name == "scheduler";
}

void HostPlan::AddNodes(const HostEntry& h, int servers, int slots, bool first,
                        std::vector<ChildSpec>* out) {
  for (int j = 0; j < servers; ++j, ++servers_started_) {
    std::vector<std::string> extra = {"DMLC_ROLE=server"};
    if (first) extra.push_back("CARAVAN_SERVER_ID=" + std::to_string(servers_started_));
    Add(h, "server " + std::to_string(servers_started_), server_argv_, extra, out);
  }
  for (int j = 0; j < slots; ++j, ++workers_started_) {
    std::vector<std::string> extra = {"DMLC_ROLE=worker", "BYTEPS_FORCE_DISTRIBUTED=1"};
    if (first) extra.push_back("DMLC_WORKER_ID=" + std::to_string(workers_started_));
    extra.insert(extra.end(), torch_.begin(), torch_.end());
    Add(h, "worker " + std::to_string(workers_started_), o_.command, extra, out);
    out->back().worker = true;
  }
  auto [it, fresh] = known_.try_emplace(h.host);
  if (fresh) it->second = HostEntry{h.host, 0, 0, h.line};
  it->second.servers += servers;
  it->second.slots += slots;
}

std::vector<ChildSpec> HostPlan::Start() {
  std::vector<ChildSpec> plan;
  Add(hosts_[0], "scheduler", server_argv_, {"DMLC_ROLE=scheduler"}, &plan);
  // Servers first, then workers, each numbered in file order.
  for (const HostEntry& h : hosts_) AddNodes(h, h.servers, 0, true, &plan);
  for (const HostEntry& h : hosts_) AddNodes(h, 0, h.slots, true, &plan);
  std::string from =
      o_.hostfile.empty() ? "--host-discovery-script " + shell_quote(o_.discovery) : o_.hostfile;
  fprintf(stderr, "caravan-launch: %s from %s, scheduler at %s:%s\n", Summary().c_str(),
          from.c_str(), root_.c_str(), port_.c_str());
  return plan;
}

std::string HostPlan::Summary() const {
  int workers = 0, servers = 0;
  for (const HostEntry& h : hosts_) {
    workers += h.slots;
    servers += h.servers;
  }
  return std::to_string(workers) + " workers, " + std::to_string(servers) + " servers on " +
         std::to_string(hosts_.size()) + " hosts";
}

const char* HostPlan::ListName() const {
  return o_.hostfile.empty() ? "the host discovery script" : "the host file";
}

std::optional<std::vector<HostEntry>> HostPlan::ListedIfChanged() {
  if (o_.hostfile.empty()) {
    std::string text = run_discovery(o_.discovery, kDiscoveryTimeoutS);
    if (listed_ && text == last_listing_) return std::nullopt;
    last_listing_ = text;
    listed_ = true;
    std::istringstream in(text);
    std::string script = "--host-discovery-script " + shell_quote(o_.discovery);
    return parse_hosts(in, script, "the output of " + script);
  }
  struct stat st;
  if (stat(o_.hostfile.c_str(), &st) == 0) {
    if (listed_ && st.st_mtim.tv_sec == mtime_ && st.st_mtim.tv_nsec == mtime_ns_)
      return std::nullopt;
    mtime_ = st.st_mtim.tv_sec;
    mtime_ns_ = st.st_mtim.tv_nsec;
  } else if (listed_) {
    return std::nullopt;  // gone: the job keeps its hosts
  }
  listed_ = true;
  return read_hostfile(o_.hostfile);
}

std::vector<ChildSpec> HostPlan::Added() {
  std::vector<ChildSpec> added;
  std::vector<HostEntry> now;
  try {
    auto changed = ListedIfChanged();
    if (!changed) return added;
    now = std::move(*changed);
  } catch (const std::exception& e) {
    fprintf(stderr,
            "caravan-launch: --elastic: %s changed but cannot be read (%s); "
            "the job keeps its hosts\n",
            ListName(), e.what());
    return added;
  }
  std::string gone;
  for (const auto& [host, was] : known_) {
    bool listed = false;
    for (const HostEntry& h : now) listed = listed || h.host == host;
    if (!listed) gone += (gone.empty() ? "" : ", ") + host;
  }
  if (!gone.empty())
    fprintf(stderr,
            "caravan-launch: --elastic: %s no longer lists %s; what runs "
            "there goes on (stop it there to take it out of the job)\n",
            ListName(), gone.c_str());
  for (const HostEntry& h : now) {
    auto was = known_.find(h.host);
    int servers = h.servers - (was == known_.end() ? 0 : was->second.servers);
    int slots = h.slots - (was == known_.end() ? 0 : was->second.slots);
    if (servers <= 0 && slots <= 0) continue;
    servers = servers > 0 ? servers : 0;
    slots = slots > 0 ? slots : 0;
    fprintf(stderr,
            "caravan-launch: --elastic: %s adds %d worker(s) and %d server(s) "
            "on %s (line %d); starting them, to join the job at a regroup\n",
            ListName(), slots, servers, h.host.c_str(), h.line);
    AddNodes(h, servers, slots, false, &added);
  }
  return added;
}

}  // namespace caravan::launch
