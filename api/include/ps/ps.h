// The ps-lite API on Caravan: include this, link libcaravan, and a ps-lite
// program runs unchanged under the same DMLC_* environment, on any van.
#ifndef PS_PS_H_
#define PS_PS_H_

#include <functional>

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
inline int MyRank() { return Postoffice::Get()->my_rank(); }

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
// Runs at Finalize, after the network has stopped (to delete servers).
inline void RegisterExitCallback(const std::function<void()>& cb) {
  Postoffice::Get()->RegisterExitCallback(cb);
}

}  // namespace ps

#endif  // PS_PS_H_
