// The ps-lite API on Caravan: include this, link libcaravan, and a ps-lite
// program runs unchanged under the same DMLC_* environment, on any van.
#ifndef PS_PS_H_
#define PS_PS_H_

#include <functional>
#include <string>

#include "ps/base.h"
#include "ps/internal/env.h"
#include "ps/internal/postoffice.h"
#include "ps/kv_app.h"
#include "ps/simple_app.h"

namespace ps {

inline int NumWorkers() { return Postoffice::Get()->num_workers(); }
inline int NumServers() { return Postoffice::Get()->num_servers(); }
inline bool IsWorker() { return Postoffice::Get()->is_worker(); }
inline bool IsServer() { return Postoffice::Get()->is_server(); }
inline bool IsScheduler() { return Postoffice::Get()->is_scheduler(); }
// The rank of this process's group (with DMLC_GROUP_SIZE 1: its node's).
inline int MyRank() { return Postoffice::Get()->my_rank() / Postoffice::Get()->group_size(); }

// Joins the job without waiting for the other nodes.
inline void StartAsync(int customer_id, const char* argv0 = nullptr) {
  Postoffice::Get()->Start(customer_id, argv0, false);
}
// Joins the job and waits until every node has started.
inline void Start(int customer_id, const char* argv0 = nullptr) {
  Postoffice::Get()->Start(customer_id, argv0, true);
}
// Leaves the job (customer 0 ends this process's part in it).
inline void Finalize(int customer_id, const bool do_barrier = true) {
  Postoffice::Get()->Finalize(customer_id, do_barrier);
}
// bytedance/ps-lite: the role a DMLC_ROLE value names ("worker", "server",
// "scheduler", "joint"); throws ps::Error on anything else.
Node::Role GetRole(const std::string& role_str);
// bytedance/ps-lite: joins as `role` with DMLC_GROUP_SIZE nodes per role
// (a JOINT process: that many workers and servers), asking for group rank
// `rank` (-1: any; with a group size above 1 a rank is required). Nodes
// start together; with do_barrier, returns once every node has started.
void StartPS(int customer_id, Node::Role role, int rank, bool do_barrier,
             const char* argv0 = nullptr);
// bytedance/ps-lite: every node StartPS made leaves the job, together.
void Finalize(int customer_id, Node::Role role, bool do_barrier = true);

// Runs at Finalize, after the network has stopped (to delete servers).
inline void RegisterExitCallback(const std::function<void()>& cb) {
  Postoffice::Get()->RegisterExitCallback(cb);
}

}  // namespace ps

#endif  // PS_PS_H_
