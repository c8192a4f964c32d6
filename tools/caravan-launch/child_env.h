// The environment caravan-launch gives its children: what they inherit,
// torch's rendezvous, and what --elastic changes for a replacement.
#pragma once

#include <string>
#include <vector>

#include "job.h"

namespace caravan::launch {

// --from-env and --hostfile without DMLC_PS_ROOT_PORT (or k8s's
// MASTER_PORT): every rank must agree on it without talking, so it is
// fixed.
constexpr int kFromEnvDefaultPort = 9000;

// The folder this program lies in, with a trailing '/'; empty if unknown.
std::string SelfDir();

// This environment without the variables the launcher sets per child, with
// the build tree's Python packages first on PYTHONPATH when run from one;
// *have_node_host_out: whether the user set DMLC_NODE_HOST.
std::vector<std::string> InheritedEnv(bool* have_node_host_out);

// `env` without the variables that place a first worker or server (its
// rank): a process started in its place (--elastic) is new to the job and
// joins at a regroup, where the rank may be taken.
std::vector<std::string> WithoutIds(std::vector<std::string> env);

// --elastic on this machine: every child gets a replacement (the
// scheduler's takes the running job over), and its failures count on
// their own.
void AddReplacements(std::vector<ChildSpec>& children);

// torch.distributed's env:// rendezvous for the workers (MASTER_ADDR,
// MASTER_PORT), the user's where set; `master_port` 0: no port of ours.
std::vector<std::string> TorchRendezvous(const std::string& master_addr, int master_port);

}  // namespace caravan::launch
