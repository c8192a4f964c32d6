// The scheduler role: registers nodes, assigns ranks, hands out the node
// table, runs barriers, and ends the job, cleanly or with the name of the
// node that was lost.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "engine/control/control_hub.h"
#include "engine/control/node_info.h"
#include "engine/core/config.h"

namespace caravan {

class SchedulerService {
 public:
  explicit SchedulerService(const JobConfig& config);
  // Serves the job until it ends; returns the process exit code.
  int run();

 private:
  void on_message(int conn, const wire::Header& head, std::vector<uint8_t>&& body);
  void on_closed(int conn, const std::string& why);
  void handle_register(int conn, std::vector<uint8_t>&& body);
  void handle_barrier(int conn, const wire::Header& head);
  void send_table();
  // Ends the job: every node gets ABORT with `why`. Caller holds mu_.
  void abort_job(const std::string& why);
  std::string missing_summary() const;
  int node_of(int conn) const;

  JobConfig config_;
  ControlHub hub_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, NodeInfo> pending_;  // conn -> registration, before the table
  std::map<int, NodeInfo> nodes_;    // conn -> node, after the table
  std::map<int, std::set<int>> barrier_arrived_;  // group -> node ids
  bool table_sent_ = false;
  bool finished_ = false;  // the shutdown barrier completed
  std::string failure_;
};

}  // namespace caravan
