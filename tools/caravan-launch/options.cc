#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace caravan::launch {
namespace {

const char kUsage[] =
    "usage: caravan-launch [options] -- COMMAND [ARGS...]\n"
    "\n"
    "Starts one scheduler, M servers and N workers on this machine, prefixes\n"
    "their output with their role and waits for them. If one fails, the\n"
    "others are stopped. Workers get BYTEPS_FORCE_DISTRIBUTED=1, so even a\n"
    "single worker uses the scheduler and servers started for it. Run from a\n"
    "build tree, it puts the tree's Python packages (build/python) first on\n"
    "PYTHONPATH.\n"
    "\n"
    "options:\n"
    "  --workers N        number of workers (default 1)\n"
    "  --servers M        number of servers (default 1)\n"
    "  --spmd             run COMMAND in every role, scheduler and servers too\n"
    "  --server-bin PATH  program for the scheduler and servers without --spmd\n"
    "                     (default: caravan-server beside caravan-launch, else on PATH)\n"
    "  --host ADDR        address of the scheduler and every node (default 127.0.0.1)\n"
    "  --timeout SECONDS  stop the job and fail after this long (default 0 = never)\n"
    "  --from-env MANAGER play this process's part of a job that a cluster manager\n"
    "                     started (mpi, slurm, k8s or auto): ranks 0..S-1 are servers\n"
    "                     (S = DMLC_NUM_SERVER, default one per host), the others\n"
    "                     workers, and rank 0 runs the scheduler too; the scheduler's\n"
    "                     address is DMLC_PS_ROOT_URI, else the manager's (see\n"
    "                     docs/cluster-launch.md). Not with --workers/--servers/--host.\n"
    "  --hostfile FILE    run the job on the hosts of FILE over ssh: one host a line,\n"
    "                     'HOST [slots=N] [servers=M]' (N workers, default 1; M servers,\n"
    "                     default 1 a host when no line says); the scheduler on the\n"
    "                     first host. Same paths on every host. Not with --workers/--servers.\n"
    "  --host-discovery-script CMD\n"
    "                     with --elastic, instead of --hostfile: the hosts are what CMD\n"
    "                     (run by /bin/sh) prints, in the host file's form or Horovod's\n"
    "                     HOST:SLOTS; run at the start and every second after, and\n"
    "                     hosts it adds join (it must answer within 10 s)\n"
    "  --ssh COMMAND      how to reach a host (default 'ssh'), e.g. 'ssh -p 2222 -i key'\n"
    "  --elastic          CARAVAN_ELASTIC=1: the job regroups when it loses a worker or\n"
    "                     server, and one that fails is started again and joins it;\n"
    "                     with --hostfile, hosts added to the file join too\n"
    "                     (see docs/elastic.md)\n"
    "  --min-workers A    with --elastic: fewer workers left end the job\n"
    "                     (CARAVAN_MIN_WORKERS, default 1)\n"
    "  --max-workers B    with --elastic: more workers are refused (CARAVAN_MAX_WORKERS)\n"
    "  --max-restarts N   with --elastic: start processes of one host (--hostfile), else\n"
    "                     each process, again at most N times (default 3)\n"
    "  --help             show this help\n";

int ParseCount(const std::string& opt, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  long v = strtol(value.c_str(), &end, 10);
  bool digits_only = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits_only || errno != 0 || *end != '\0' || v < 1 || v > kMaxProcesses) {
    UsageError("invalid " + opt + " value '" + value + "': expected an integer from 1 to " +
               std::to_string(kMaxProcesses));
  }
  return static_cast<int>(v);
}

double ParseSeconds(const std::string& opt, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  double v = strtod(value.c_str(), &end);
  if (value.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0) {
    UsageError("invalid " + opt + " value '" + value + "': expected a number of seconds >= 0");
  }
  return v;
}

}  // namespace

[[noreturn]] void UsageError(const std::string& msg) {
  fprintf(stderr, "caravan-launch: %s\n(run 'caravan-launch --help' for usage)\n", msg.c_str());
  exit(2);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  bool have_command = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      o.command.assign(argv + i + 1, argv + argc);
      have_command = true;
      break;
    }
    if (arg == "--help" || arg == "-h") {
      fputs(kUsage, stdout);
      exit(0);
    }
    if (arg == "--spmd" || arg == "--elastic") {
      (arg == "--spmd" ? o.spmd : o.elastic) = true;
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    static const std::set<std::string> kValued = {
        "--workers",     "--servers",     "--server-bin",   "--host",
        "--timeout",     "--from-env",    "--hostfile",     "--ssh",
        "--min-workers", "--max-workers", "--max-restarts", "--host-discovery-script"};
    if (!kValued.count(name)) {
      if (arg.rfind('-', 0) == 0) UsageError("unknown option '" + arg + "'");
      UsageError("unexpected argument '" + arg + "': put the command after '--'");
    }
    if (!inline_value) {
      if (i + 1 >= argc) UsageError("option " + name + " needs a value");
      value = argv[++i];
    }
    o.given.push_back(name);
    if (name == "--hostfile" || name == "--ssh" || name == "--host-discovery-script") {
      if (value.empty()) UsageError("invalid " + name + " value ''");
      (name == "--ssh" ? o.ssh : name == "--hostfile" ? o.hostfile : o.discovery) = value;
    } else if (name == "--from-env") {
      if (value.empty())
        UsageError("invalid --from-env value '': expected mpi, slurm, k8s or auto");
      o.from_env = value;
    } else if (name == "--workers") {
      o.workers = ParseCount(name, value);
    } else if (name == "--servers") {
      o.servers = ParseCount(name, value);
    } else if (name == "--min-workers" || name == "--max-workers") {
      (name == "--min-workers" ? o.min_workers : o.max_workers) = ParseCount(name, value);
    } else if (name == "--max-restarts") {
      o.max_restarts = value == "0" ? 0 : ParseCount(name, value);
    } else if (name == "--timeout") {
      o.timeout = ParseSeconds(name, value);
    } else if (name == "--host") {
      if (value.empty()) UsageError("invalid --host value '': expected an address");
      if (value.find(':') != std::string::npos)
        UsageError("invalid --host value '" + value +
                   "': an IPv6 address; Caravan's nodes speak IPv4 (give an IPv4 address or a "
                   "host name that has one)");
      o.host = value;
    } else {
      if (value.empty()) UsageError("invalid --server-bin value '': expected a program");
      o.server_bin = value;
    }
  }
  if (!have_command) UsageError("missing '-- COMMAND': give the program to run after '--'");
  if (o.command.empty()) UsageError("missing COMMAND after '--'");
  if (!o.hostfile.empty() && !o.from_env.empty())
    UsageError("--hostfile and --from-env are two ways to place a job: give one");
  if (!o.discovery.empty() && (!o.hostfile.empty() || !o.from_env.empty()))
    UsageError(std::string("--host-discovery-script and ") +
               (o.hostfile.empty() ? "--from-env" : "--hostfile") +
               " are two ways to place a job: give one");
  if (!o.discovery.empty() && !o.elastic)
    UsageError(
        "--host-discovery-script needs --elastic (without it, list the hosts with "
        "--hostfile)");
  auto given = [&o](const char* opt) {
    return std::find(o.given.begin(), o.given.end(), opt) != o.given.end();
  };
  if (!o.hostfile.empty() || !o.discovery.empty()) {
    const char* list = o.hostfile.empty() ? "--host-discovery-script" : "--hostfile";
    for (const char* opt : {"--workers", "--servers", "--host"})
      if (given(opt))
        UsageError(std::string(opt) + " has no meaning with " + list +
                   ": its lines give the hosts, slots and servers");
  }
  if (!o.from_env.empty()) {
    for (const char* opt : {"--workers", "--servers", "--host"})
      if (given(opt))
        UsageError(std::string(opt) +
                   " has no meaning with --from-env: the cluster manager's "
                   "ranks and DMLC_NUM_SERVER decide the job's shape");
  }
  for (const char* opt : {"--min-workers", "--max-workers", "--max-restarts"})
    if (!o.elastic && given(opt)) UsageError(std::string(opt) + " needs --elastic");
  if (o.min_workers > 0 && o.max_workers > 0 && o.min_workers > o.max_workers)
    UsageError("--min-workers " + std::to_string(o.min_workers) + " is more than --max-workers " +
               std::to_string(o.max_workers));
  if (o.spmd && !o.server_bin.empty()) {
    UsageError("--server-bin '" + o.server_bin + "' has no effect with --spmd");
  }
  if (o.workers + o.servers + 1 > kMaxProcesses) {
    UsageError("--workers " + std::to_string(o.workers) + " with --servers " +
               std::to_string(o.servers) + " is more than " + std::to_string(kMaxProcesses) +
               " processes");
  }
  return o;
}

}  // namespace caravan::launch
