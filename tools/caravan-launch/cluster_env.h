// caravan-launch --from-env: which part of a job this process plays, read
// from the variables a cluster manager gives every process it starts
// (docs/cluster-launch.md): Open MPI's or PMIx/PMI's under mpirun, Slurm's
// under srun, and those Kubeflow's PyTorchJob operator sets in every pod.
#pragma once

#include <functional>
#include <string>

namespace caravan::launch {

struct ClusterPlace {
  std::string manager;     // "mpi", "slurm" or "k8s"
  int rank = 0, size = 0;  // this process among all those the manager started
  int hosts = 0;           // hosts of the job, 0 when the manager does not say
  std::string root_host;   // where the scheduler runs (rank 0's host); empty: unknown
  int root_port = 0;       // 0: not given
  std::string source;      // the variables read, for messages: "OMPI_COMM_WORLD_RANK=2 of ..."
};

using GetEnv = std::function<const char*(const char*)>;

// `manager`: "mpi", "slurm", "k8s", or "auto" (the first whose variables are
// set, in that order). Throws std::runtime_error naming the variable that is
// missing or malformed, or, for "auto", every one it looked for.
ClusterPlace read_cluster_env(const std::string& manager, const GetEnv& getenv);

// The first host of a Slurm node list: "node[07-09,12],gpu1" gives "node07".
// Throws std::runtime_error on a list it cannot read.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace caravan::launch
