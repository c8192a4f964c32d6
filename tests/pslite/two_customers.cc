// A ps-lite program whose worker runs two customers (customer ids 0 and 1)
// on two threads, each with its own KVWorker on app 0, pushing disjoint
// keys; the sums must come back to the right customer.
#include <cstdio>
#include <thread>
#include <vector>

#include "ps/ps.h"

using namespace ps;

static void RunCustomer(int customer_id) {
  KVWorker<int> kv(0, customer_id);
  const int num = 100;
  std::vector<Key> keys(num);
  std::vector<int> vals(num);
  for (int i = 0; i < num; ++i) {
    keys[i] = kMaxKey / num * i + static_cast<Key>(customer_id);  // disjoint per customer
    vals[i] = (customer_id + 1) * 1000 + i;
  }
  for (int round = 1; round <= 3; ++round) {
    std::vector<int> out;
    kv.Wait(kv.PushPull(keys, vals, &out));
    // Other workers may or may not have pushed this round yet; never less
    // than this worker's own pushes so far.
    for (int i = 0; i < num; ++i) CHECK_GE(out[i], vals[i] * round) << "customer " << customer_id;
  }
  std::printf("worker %d customer %d: sums came back to the right customer\n", MyRank(),
              customer_id);
}

int main() {
  Start(0);
  if (IsServer()) {
    auto server = new KVServer<int>(0);
    server->set_request_handle(KVServerDefaultHandle<int>());
    RegisterExitCallback([server]() { delete server; });
  }
  if (IsWorker()) {
    std::thread a(RunCustomer, 0), b(RunCustomer, 1);
    a.join();
    b.join();
  }
  Finalize(0, true);
  return 0;
}
