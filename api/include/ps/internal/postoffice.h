// The Postoffice: this process's place in the job (role, rank, node ids,
// key ranges), its customers, barriers, and start and end.
#ifndef PS_INTERNAL_POSTOFFICE_H_
#define PS_INTERNAL_POSTOFFICE_H_

#include <functional>
#include <vector>

#include "ps/base.h"
#include "ps/internal/customer.h"
#include "ps/internal/van.h"
#include "ps/range.h"

namespace ps {

class Postoffice {
 public:
  static Postoffice* Get();

  Van* van();

  // Joins the job DMLC_ROLE describes (every role: scheduler, server,
  // worker). The first call does the work; later calls from other customers
  // wait for it. With do_barrier, waits until every node has started.
  // Throws ps::Error naming the variable or node at fault.
  void Start(int customer_id, const char* argv0, bool do_barrier);
  // Customer 0's call ends this process's part in the job: a barrier of all
  // nodes when do_barrier, the engine's shutdown barrier, then the exit
  // callback. Other customers' calls return at once.
  void Finalize(int customer_id, bool do_barrier = true);

  void AddCustomer(Customer* customer);
  void RemoveCustomer(Customer* customer);
  Customer* GetCustomer(int app_id, int customer_id, int timeout = 0) const;

  // The node ids of a group (kServerGroup + kWorkerGroup, ...) or {id}.
  const std::vector<int>& GetNodeIDs(int node_id) const;
  // The key range of each server, in rank order: [0, kMaxKey) split evenly.
  const std::vector<Range>& GetServerKeyRanges();

  void RegisterExitCallback(const std::function<void()>& cb);

  static int WorkerRankToID(int rank) { return rank * 2 + 9; }
  static int ServerRankToID(int rank) { return rank * 2 + 8; }
  static int IDtoRank(int id) { return (id - 8) / 2 < 0 ? 0 : (id - 8) / 2; }

  int num_workers() const;
  int num_servers() const;
  int my_rank() const;
  bool is_worker() const;
  bool is_server() const;
  bool is_scheduler() const;
  int verbose() const;

  // Blocks until every node of `node_group` called Barrier with it. A
  // process is one member: threads calling it at once share one barrier.
  void Barrier(int customer_id, int node_group);

 private:
  Postoffice();
};

}  // namespace ps

#endif  // PS_INTERNAL_POSTOFFICE_H_
