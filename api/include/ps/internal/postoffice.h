// The Postoffice: one node of the job in this process (role, rank, node
// ids, key ranges), its customers, barriers, and start and end.
//
// A process usually is one node. It is several when a worker process
// starts several customers (dmlc/ps-lite: each Start(customer_id) counts
// as a worker), with DMLC_GROUP_SIZE instances per process, or as a JOINT
// worker and server (bytedance/ps-lite): each is a Postoffice of its own
// with its own connections, found with GetWorker(i) and GetServer(i).
#ifndef PS_INTERNAL_POSTOFFICE_H_
#define PS_INTERNAL_POSTOFFICE_H_

#include <functional>
#include <string>
#include <vector>

#include "ps/base.h"
#include "ps/internal/customer.h"
#include "ps/internal/message.h"
#include "ps/internal/van.h"
#include "ps/range.h"

namespace caravan {
namespace psl {
class Member;
}  // namespace psl
}  // namespace caravan

namespace ps {

class Postoffice {
 public:
  // This process's first node: the scheduler, else server 0, else worker 0
  // (the role given to Init, else DMLC_ROLE's).
  static Postoffice* Get();
  // Worker or server node `index` of this process: an instance of
  // DMLC_GROUP_SIZE, or the node a worker's Start(customer_id) made.
  // Throws ps::Error when there is none.
  static Postoffice* GetWorker(int index = 0);
  static Postoffice* GetServer(int index = 0);
  // The scheduler node, or nullptr in a server or worker process.
  static Postoffice* GetScheduler();
  // Makes this process's nodes for `role`: DMLC_GROUP_SIZE workers or
  // servers, both for JOINT, one scheduler. Later calls do nothing.
  static void Init(Node::Role role);

  Van* van();

  // dmlc/ps-lite: joins the job DMLC_ROLE describes. In a worker process a
  // customer id other than 0 joins as a worker node of its own. With
  // do_barrier, waits until every node has started. Throws ps::Error
  // naming the variable or node at fault.
  void Start(int customer_id, const char* argv0, bool do_barrier);
  // bytedance/ps-lite: joins as `role` (WORKER, SERVER or SCHEDULER),
  // asking for `rank` (-1: any).
  void Start(int customer_id, Node::Role role, int rank, bool do_barrier,
             const char* argv0 = nullptr);
  // Customer 0's call ends this node's part in the job: a barrier of all
  // nodes when do_barrier, the engine's shutdown barrier, then the exit
  // callback. Node 0 of a process first lets the process's other nodes
  // finish their own Finalize. Other customers' calls only do the barrier.
  void Finalize(int customer_id, bool do_barrier = true);

  void AddCustomer(Customer* customer);
  void RemoveCustomer(Customer* customer);
  Customer* GetCustomer(int app_id, int customer_id, int timeout = 0) const;

  // The node ids of a group (kServerGroup + kWorkerGroup, ...) or {id}.
  const std::vector<int>& GetNodeIDs(int node_id) const;
  // The key range of each server, in rank order: [0, kMaxKey) split evenly
  // over DMLC_NUM_SERVER.
  const std::vector<Range>& GetServerKeyRanges();

  void RegisterExitCallback(const std::function<void()>& cb);

  static int WorkerRankToID(int rank) { return rank * 2 + 9; }
  static int ServerRankToID(int rank) { return rank * 2 + 8; }
  static int IDtoRank(int id) { return (id - 8) / 2 < 0 ? 0 : (id - 8) / 2; }
  // DMLC_GROUP_SIZE: node instances per process (bytedance/ps-lite);
  // instance i of group rank r has rank r * group_size + i.
  int GroupWorkerRankToInstanceID(int rank, int instance_idx) const {
    return WorkerRankToID(rank * group_size() + instance_idx);
  }
  int GroupServerRankToInstanceID(int rank, int instance_idx) const {
    return ServerRankToID(rank * group_size() + instance_idx);
  }
  int InstanceIDtoGroupRank(int id) const { return IDtoRank(id) / group_size(); }

  // DMLC_NUM_WORKER and DMLC_NUM_SERVER (groups of DMLC_GROUP_SIZE nodes).
  int num_workers() const;
  int num_servers() const;
  int group_size() const;
  int num_worker_instances() const { return num_workers() * group_size(); }
  int num_server_instances() const { return num_servers() * group_size(); }
  // This node's rank among its role's nodes (instances).
  int my_rank() const;
  int preferred_rank() const;
  int instance_idx() const;
  bool is_worker() const;
  bool is_server() const;
  bool is_scheduler() const;
  bool is_recovery() const { return false; }
  std::string role_str() const;
  int verbose() const;

  // Blocks until every node of `node_group` called Barrier with it. Threads
  // of one node calling it at once share one barrier.
  void Barrier(int customer_id, int node_group);

  // Engine use.
  explicit Postoffice(caravan::psl::Member* member) : member_(member) {}
  caravan::psl::Member* member() const { return member_; }

 private:
  caravan::psl::Member* member_;
};

}  // namespace ps

// Logs at INFO when PS_VERBOSE is at least x, as ps-lite's does.
#ifndef PS_VLOG
#define PS_VLOG(x) LOG_IF(INFO, (x) <= ::ps::Postoffice::Get()->verbose())
#endif

#endif  // PS_INTERNAL_POSTOFFICE_H_
