// caravan-launch --hostfile (or --host-discovery-script): every process of
// the job, each started over ssh on its host (docs/cluster-launch.md);
// with --elastic, also those of the hosts that a changed list adds.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hostfile.h"
#include "job.h"
#include "options.h"

namespace caravan::launch {

class HostPlan {
 public:
  // Reads the host file and the job's variables; a UsageError (exit 2)
  // names what is wrong with them.
  HostPlan(const Options& o, const std::string& server_bin);

  // The scheduler, servers and workers of the host file as it was read.
  std::vector<ChildSpec> Start();
  // "3 workers, 2 servers on 3 hosts".
  std::string Summary() const;
  // --elastic: when the host list changed since it was last read (the
  // host file, or what the discovery script prints), the processes of the
  // hosts it adds and of the slots and servers it adds to a host, as nodes
  // new to the job (they join at a regroup). A list that cannot be read
  // now, or hosts it no longer lists, change nothing; both are said on
  // stderr.
  std::vector<ChildSpec> Added();
  // "the host file" or "the host discovery script".
  const char* ListName() const;
  // A discovery script that takes longer fails (and is killed): the
  // launcher's loop, which restarts lost processes, waits for it.
  static constexpr int kDiscoveryTimeoutS = 10;

 private:
  // The hosts listed now, when the list changed since it was last read
  // (always, the first time); throws std::runtime_error naming what is
  // wrong with it.
  std::optional<std::vector<HostEntry>> ListedIfChanged();
  // One process on host `h`, and its replacement (--elastic).
  ChildSpec Make(const HostEntry& h, const std::string& name, const std::vector<std::string>& argv,
                 const std::vector<std::string>& extra) const;
  void Add(const HostEntry& h, const std::string& name, const std::vector<std::string>& argv,
           const std::vector<std::string>& extra, std::vector<ChildSpec>* out) const;
  // `servers` servers and `slots` workers on `h`, numbered on from those
  // started; `first`: with the ranks their numbers give (the start).
  void AddNodes(const HostEntry& h, int servers, int slots, bool first,
                std::vector<ChildSpec>* out);

  Options o_;
  std::vector<std::string> server_argv_;
  std::vector<HostEntry> hosts_;
  std::vector<std::string> forward_;  // every remote process's variables
  std::vector<std::string> torch_;    // the workers' torch rendezvous
  std::vector<std::string> ssh_;
  std::string stdin_line_, dir_, root_, port_;
  bool have_node_host_ = false;
  int servers_started_ = 0, workers_started_ = 0;
  std::map<std::string, HostEntry> known_;  // by HostEntry::host: what runs there
  bool listed_ = false;                     // the list was read once
  time_t mtime_ = 0;                        // the host file's, when last read
  long mtime_ns_ = 0;
  std::string last_listing_;  // the discovery script's output, when last read
};

}  // namespace caravan::launch
