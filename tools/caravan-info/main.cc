// caravan-info: what Caravan would find and do here, without joining a job.
// Lists every plugin on the search path (kind, name, version, ABI, path,
// capabilities where the plugin can start here, load error if any) with
// each parameter's default, value here and meaning; then the engine's
// settings likewise, and the variables set that Caravan does not read.
// --check reads this node's whole DMLC_/BYTEPS_/PS_/CARAVAN_ environment as
// caravan_init() or caravan-server would and says what the node would do,
// or which variable stops it.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "caravan/plugin/compressor_v1.h"
#include "caravan/plugin/reducer_v1.h"
#include "caravan/plugin/van_v1.h"
#include "caravan/plugin/van_v2.h"
#include "engine/base/config.h"
#include "engine/base/error.h"
#include "engine/base/net.h"
#include "engine/base/settings.h"
#include "engine/numa/cpu_plan.h"
#include "engine/numa/cpu_settings.h"
#include "engine/numa/topology.h"
#include "engine/plugin/host_services.h"
#include "engine/plugin/loader.h"
#include "engine/reducer/reducer.h"

namespace caravan {
namespace {

const char kUsage[] =
    "usage: caravan-info [--check]\n"
    "\n"
    "Lists the plugins on the search path (CARAVAN_PLUGIN_PATH, then beside libcaravan, then\n"
    "the install's folder) with their parameters, the engine's settings with their values\n"
    "here, and the variables set that Caravan does not read.\n"
    "  --check   also read this node's environment as a worker, server or scheduler would\n"
    "            (DMLC_ROLE) and say what it would do; exit 2 naming the variable at fault\n";

std::string value_here(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (!v) return "unset";
  if (name == "CARAVAN_JOB_TOKEN") return "set (not shown)";
  return std::string("'") + v + "'";
}

// A reducer's capabilities need an instance: started and stopped here.
std::string reducer_capabilities(const PluginLibrary& lib) {
  const auto* ops = static_cast<const caravan_reducer_ops_v1*>(lib.descriptor->ops);
  HostServices host(CARAVAN_PLUGIN_KIND_REDUCER, lib.descriptor->name);
  void* ctx = nullptr;
  caravan_status s = ops->init(host.table(), &ctx);
  if (s != CARAVAN_STATUS_OK) return "cannot start here: " + describe_plugin_failure(s);
  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  std::string text =
      ops->properties(ctx, &p) == CARAVAN_STATUS_OK
          ? reducer_capability_names(p.caps) + (p.kernel ? std::string("; kernel ") + p.kernel : "")
          : "properties failed: " + describe_plugin_failure(s);
  ops->finalize(ctx);
  return text;
}

// A van's capabilities (ABI 2) need an instance too: started and stopped
// here, without listening. Says whether GPU tensors go to the van as they
// are or through host memory (the engine's stager).
std::string van_capabilities(const PluginLibrary& lib) {
  const auto* ops = static_cast<const caravan_van_ops_v2*>(lib.descriptor->ops);
  HostServices host(CARAVAN_PLUGIN_KIND_VAN, lib.descriptor->name);
  void* ctx = nullptr;
  caravan_status s = ops->init(host.table(), &ctx);
  if (s != CARAVAN_STATUS_OK) return "cannot start here: " + describe_plugin_failure(s);
  caravan_van_properties_v2 p{};
  p.struct_size = sizeof p;
  s = ops->properties(ctx, &p);
  std::string text;
  if (s != CARAVAN_STATUS_OK) {
    text = "properties failed: " + describe_plugin_failure(s);
  } else {
    text = std::string("transport ") + (p.transport ? p.transport : "?");
    if (p.caps & CARAVAN_VAN_CAP_V2_ZERO_COPY_SEND) text += "; zero-copy send";
    if (p.caps & CARAVAN_VAN_CAP_V2_RDMA) text += "; RDMA";
    text += (p.caps & CARAVAN_VAN_CAP_V2_DEVICE_MEMORY)
                ? "; device memory: yes"
                : "; device memory: no (GPU tensors are staged through host memory)";
  }
  ops->finalize(ctx);
  return text;
}

void list_plugins(const std::string& plugin_path) {
  std::vector<std::string> dirs = plugin_search_dirs(plugin_path);
  std::printf("Plugins, searched in:");
  for (const auto& d : dirs) std::printf(" %s", d.c_str());
  std::printf("\n");
  std::map<std::string, std::string> first;  // "van zmq" -> the path that wins
  for (const auto& dir : dirs) {
    DIR* folder = opendir(dir.c_str());
    if (!folder) continue;
    std::vector<std::string> files;
    while (dirent* e = readdir(folder)) files.push_back(e->d_name);
    closedir(folder);
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      caravan_plugin_kind kind;
      std::string rest;
      if (file.rfind("libcaravan-van-", 0) == 0) {
        kind = CARAVAN_PLUGIN_KIND_VAN;
        rest = file.substr(15);
      } else if (file.rfind("libcaravan-reducer-", 0) == 0) {
        kind = CARAVAN_PLUGIN_KIND_REDUCER;
        rest = file.substr(19);
      } else if (file.rfind("libcaravan-compressor-", 0) == 0) {
        kind = static_cast<caravan_plugin_kind>(CARAVAN_PLUGIN_KIND_COMPRESSOR);
        rest = file.substr(22);
      } else {
        continue;
      }
      if (rest.size() < 4 || rest.compare(rest.size() - 3, 3, ".so") != 0) continue;
      std::string name = rest.substr(0, rest.size() - 3);
      std::string path = dir + "/" + file;
      std::string key = std::string(plugin_kind_name(kind)) + " " + name;
      std::printf("\n  %s %s\n    path: %s\n", plugin_kind_name(kind), name.c_str(), path.c_str());
      if (first.count(key)) {
        std::printf("    not used: %s comes first on the search path\n", first[key].c_str());
        continue;
      }
      first[key] = path;
      std::unique_ptr<PluginLibrary> lib;
      try {
        uint32_t newest = kind == CARAVAN_PLUGIN_KIND_VAN ? CARAVAN_VAN_ABI_MAJOR_V2 : 1;
        lib = load_plugin(kind, 1, newest, path, "caravan-info", "");
      } catch (const Error& e) {
        std::printf("    load error: %s\n", e.what());
        continue;
      }
      const caravan_plugin_descriptor& d = *lib->descriptor;
      std::printf("    version %s, ABI %u.%u: %s\n", d.version ? d.version : "?", d.abi_major,
                  d.abi_minor, d.description ? d.description : "");
      if (kind == CARAVAN_PLUGIN_KIND_REDUCER)
        std::printf("    capabilities: %s\n", reducer_capabilities(*lib).c_str());
      else if (static_cast<uint32_t>(kind) == CARAVAN_PLUGIN_KIND_COMPRESSOR)
        std::printf("    chosen per tensor: byteps_compressor_type=%s (docs/compression.md)\n",
                    name.c_str());
      else if (d.abi_major == CARAVAN_VAN_ABI_MAJOR_V2)
        std::printf("    capabilities: %s\n", van_capabilities(*lib).c_str());
      else
        std::printf("    capabilities: reported by a started van (caravan-van-check shows them)\n");
      std::string prefix = plugin_param_prefix(kind, d.name ? d.name : name);
      for (size_t i = 0; i < d.num_params && d.params; ++i) {
        const caravan_param_info& p = d.params[i];
        std::string var = prefix + (p.name ? p.name : "?");
        std::printf("    %s = %s  [default %s]  %s\n", var.c_str(), value_here(var).c_str(),
                    p.default_value ? p.default_value : "none", p.description ? p.description : "");
      }
    }
  }
}

void list_settings() {
  std::printf("\nEngine settings:\n");
  for (const Setting& s : known_settings())
    std::printf("  %s = %s  [when unset: %s]  %s\n", s.name, value_here(s.name).c_str(), s.unset,
                s.meaning);
}

int check() {
  std::printf("\nThis node (--check):\n");
  try {
    // A lone worker needs no scheduler or server, as caravan_init() decides.
    auto is = [](const char* name, const char* value) {
      const char* v = std::getenv(name);
      return v && !std::strcmp(v, value);
    };
    bool alone = is("DMLC_ROLE", "worker") && is("DMLC_NUM_WORKER", "1") &&
                 !is("BYTEPS_FORCE_DISTRIBUTED", "1");
    JobConfig c = JobConfig::from_env(std::nullopt, alone);
    std::printf("  role %s\n", role_name(c.role));
    std::printf("  job: %d worker(s), %d server(s); scheduler at %s:%d\n", c.num_workers,
                c.num_servers, c.root_uri.empty() ? "(none)" : c.root_uri.c_str(), c.root_port);
    std::printf("  van %s%s; reducer %s; plugin path %s\n", c.van.c_str(),
                c.van_source.empty() ? "" : (" (" + c.van_source + ")").c_str(), c.reducer.c_str(),
                c.plugin_path.empty() ? "(default)" : c.plugin_path.c_str());
    std::printf("  advertises %s, port %s\n",
                !c.node_host.empty()   ? c.node_host.c_str()
                : !c.interface.empty() ? ("the address of " + c.interface).c_str()
                                       : "the first non-loopback interface's address",
                c.port ? std::to_string(c.port).c_str() : "any free");
    std::printf(
        "  partitions of %s; timeouts: connect %d s, operations %d s\n",
        c.partition_bytes > 0
            ? (std::to_string(c.partition_bytes) + " bytes").c_str()
            : "4096000 bytes on one host, 131072 across hosts (BYTEPS_PARTITION_BYTES unset)",
        c.connect_timeout_s, c.op_timeout_s);
    std::printf("  job token %s\n", c.job_token ? "set: connections and messages are sealed"
                                                : "unset: no authentication");
    // What the node would do next, each of which can stop it: find its
    // address, load its plugins, bind a worker to its CPUs.
    if (c.role != Role::kScheduler || !c.node_host.empty() || !c.interface.empty())
      std::printf("  address %s\n", net::advertised_host(c.node_host, c.interface).c_str());
    // The scheduler speaks TCP itself; a worker alone on its machine has no
    // peer.
    bool sends = c.role == Role::kServer || (c.role == Role::kWorker && !alone);
    if (sends)
      load_plugin(CARAVAN_PLUGIN_KIND_VAN, CARAVAN_VAN_ABI_MAJOR_V1, CARAVAN_VAN_ABI_MAJOR_V2,
                  c.van, c.van_source.empty() ? "CARAVAN_VAN=" + c.van : c.van_source,
                  c.plugin_path);
    // A worker alone on its machine sums nothing: it loads no reducer.
    const char* local_size = std::getenv("BYTEPS_LOCAL_SIZE");
    bool sums = c.role == Role::kServer ||
                (c.role == Role::kWorker &&
                 (!alone || (local_size && *local_size && std::strcmp(local_size, "1") != 0)));
    if (sums)
      load_plugin(CARAVAN_PLUGIN_KIND_REDUCER, CARAVAN_REDUCER_ABI_MAJOR_V1, c.reducer,
                  "CARAVAN_REDUCER=" + c.reducer, c.plugin_path);
    if (sends || sums)
      std::printf("  plugins load:%s%s\n", sends ? " van" : "", sums ? " reducer" : "");
    if (c.role == Role::kWorker) {
      CpuSettings cpus = CpuSettings::from_env();
      if (!cpus.numa_on) {
        std::printf("  CPUs: not bound (BYTEPS_NUMA_ON=0)\n");
      } else {
        Topology here = Topology::this_machine(!cpus.visible);
        CpuPlan plan = plan_worker_cpus(here.get(), cpus);
        std::printf("  CPUs of local rank %d: %s\n", cpus.local_rank,
                    plan.cpus.empty()
                        ? ("unbound: " + plan.how).c_str()
                        : (format_cpu_list(plan.cpus) + " (" + plan.how + ")").c_str());
      }
    }
    return 0;
  } catch (const Error& e) {
    std::printf("  would stop: %s\n", e.what());
    return 2;
  }
}

}  // namespace
}  // namespace caravan

extern char** environ;

int main(int argc, char** argv) {
  bool with_check = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--check")) {
      with_check = true;
    } else {
      std::fputs(std::strcmp(argv[i], "--help") ? "caravan-info: unknown option\n" : "", stderr);
      std::fputs(caravan::kUsage, std::strcmp(argv[i], "--help") ? stderr : stdout);
      return std::strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  const char* path = std::getenv("CARAVAN_PLUGIN_PATH");
  caravan::list_plugins(path ? path : "");
  caravan::list_settings();
  std::vector<std::string> environment;
  for (char** e = environ; e && *e; ++e) environment.emplace_back(*e);
  std::vector<std::string> unknown = caravan::unknown_settings(environment);
  std::printf("\nSet but not read by Caravan:%s\n", unknown.empty() ? " none" : "");
  for (const auto& w : unknown) std::printf("  %s\n", w.c_str());
  return with_check ? caravan::check() : 0;
}
