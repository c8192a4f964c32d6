#include "cluster_env.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace caravan::launch {
namespace {

// A non-negative integer from variable `name`; -1 when it is not set.
int read_int(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  if (!v) return -1;
  errno = 0;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (!*v || *end || errno != 0 || n < 0 || n > 1000000)
    throw std::runtime_error(std::string(name) + "='" + v + "' is not a count");
  return static_cast<int>(n);
}

// Reads the rank and size from the variables named; false when either is
// not set.
bool read_rank_size(const GetEnv& getenv, const char* rank_var, const char* size_var,
                    ClusterPlace* p) {
  p->rank = read_int(getenv, rank_var);
  p->size = read_int(getenv, size_var);
  if (p->rank < 0 || p->size < 0) return false;
  p->source = std::string(rank_var) + "=" + std::to_string(p->rank) + " of " + size_var + "=" +
              std::to_string(p->size);
  return true;
}

const char* first_set(const GetEnv& getenv, std::initializer_list<const char*> names,
                      const char** which) {
  for (const char* n : names)
    if (getenv(n)) {
      *which = n;
      return getenv(n);
    }
  return nullptr;
}

ClusterPlace from_mpi(const GetEnv& getenv) {
  ClusterPlace p;
  p.manager = "mpi";
  // Open MPI's own names first; PMIx and PMI (MPICH, Intel MPI) after.
  const char* rank_var = nullptr;
  const char* size_var = nullptr;
  first_set(getenv, {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, &rank_var);
  first_set(getenv, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, &size_var);
  if (!rank_var || !size_var)
    throw std::runtime_error(
        "--from-env mpi: no rank and size (OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, or "
        "PMIX_RANK/PMI_RANK and PMI_SIZE); is this process started by mpirun?");
  read_rank_size(getenv, rank_var, size_var, &p);
  // Open MPI says how many ranks share this host; with the same number on
  // every host (mpirun's usual mapping) that gives the hosts.
  int local_size = read_int(getenv, "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (local_size > 0 && p.size % local_size == 0) p.hosts = p.size / local_size;
  return p;
}

ClusterPlace from_slurm(const GetEnv& getenv) {
  ClusterPlace p;
  p.manager = "slurm";
  if (!read_rank_size(getenv, "SLURM_PROCID", "SLURM_NTASKS", &p))
    throw std::runtime_error(
        "--from-env slurm: SLURM_PROCID and SLURM_NTASKS are not both set; is this process "
        "started by srun?");
  int nodes = read_int(getenv, "SLURM_JOB_NUM_NODES");
  if (nodes < 0) nodes = read_int(getenv, "SLURM_NNODES");
  if (nodes > 0) p.hosts = nodes;
  const char* which = nullptr;
  if (const char* list = first_set(getenv, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"}, &which)) {
    try {
      p.root_host = first_slurm_host(list);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(which) + ": " + e.what());
    }
  }
  return p;
}

ClusterPlace from_k8s(const GetEnv& getenv) {
  ClusterPlace p;
  p.manager = "k8s";
  const char* addr = getenv("MASTER_ADDR");
  if (!read_rank_size(getenv, "RANK", "WORLD_SIZE", &p) || !addr || !*addr)
    throw std::runtime_error(
        "--from-env k8s: RANK, WORLD_SIZE and MASTER_ADDR (set by Kubeflow's PyTorchJob in "
        "every pod) are not all set");
  p.root_host = addr;
  int port = read_int(getenv, "MASTER_PORT");
  if (port > 65535)
    throw std::runtime_error("MASTER_PORT=" + std::to_string(port) + " is not a port");
  if (port > 0) p.root_port = port;
  return p;
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry: up to a comma that is not inside brackets.
  size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    char c = nodelist[end];
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
  }
  std::string first = nodelist.substr(0, end);
  size_t open = first.find('[');
  if (first.empty() || depth != 0)
    throw std::runtime_error("cannot read node list '" + nodelist + "'");
  if (open == std::string::npos) return first;
  size_t close = first.find(']', open);
  if (close == std::string::npos || close == open + 1)
    throw std::runtime_error("cannot read node list '" + nodelist + "'");
  // "node[07-09,12]suffix": the first number of the range keeps its zeros.
  std::string range = first.substr(open + 1, close - open - 1);
  std::string lo = range.substr(0, range.find_first_of(",-"));
  if (lo.empty() || lo.find_first_not_of("0123456789") != std::string::npos)
    throw std::runtime_error("cannot read node list '" + nodelist + "'");
  return first.substr(0, open) + lo + first.substr(close + 1);
}

ClusterPlace read_cluster_env(const std::string& manager, const GetEnv& getenv) {
  ClusterPlace p;
  if (manager == "mpi")
    p = from_mpi(getenv);
  else if (manager == "slurm")
    p = from_slurm(getenv);
  else if (manager == "k8s")
    p = from_k8s(getenv);
  else if (manager == "auto") {
    if (getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK") || getenv("PMI_RANK"))
      p = from_mpi(getenv);
    else if (getenv("SLURM_PROCID"))
      p = from_slurm(getenv);
    else if (getenv("RANK") && getenv("WORLD_SIZE"))
      p = from_k8s(getenv);
    else
      throw std::runtime_error(
          "--from-env auto: no cluster manager's variables found (looked for "
          "OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID, RANK with WORLD_SIZE)");
  } else {
    throw std::runtime_error("--from-env '" + manager + "' is not mpi, slurm, k8s or auto");
  }
  if (p.size < 1 || p.rank >= p.size)
    throw std::runtime_error(p.source +
                             ": the rank must be below the size, and the size at least 1");
  return p;
}

}  // namespace caravan::launch
