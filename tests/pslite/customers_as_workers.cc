// A ps-lite program in dmlc/ps-lite's multi-worker form (its
// test_kv_app_multi_workers): each worker process runs C customers on C
// threads, each calling Start(customer_id), and each counts as a worker of
// the job (DMLC_NUM_WORKER = processes x C). Every customer pushes the
// same values for keys of its own; after a barrier of all workers the
// pulled sums must be exact. Customer 0 then finalizes at once while the
// others still work: its Finalize must wait for them, not strand them.
//
// usage: pslite_customers_as_workers C [die|noserver]   (every role, by hand)
// With "die", the last customer of the worker process whose first node is
// not rank 0 aborts after its pushes: the job must then end everywhere,
// naming it. With "noserver", the servers never make their KVServer: the
// job must end, the servers naming what never came.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ps/ps.h"

using namespace ps;

static bool die = false;

static void RunCustomer(int customer_id, int customers) {
  Start(customer_id);
  CHECK(IsWorker());
  CHECK_EQ(NumWorkers(), std::atoi(std::getenv("DMLC_NUM_WORKER")))
      << "every customer's Start counts as a worker";
  const int processes = NumWorkers() / customers;
  KVWorker<float> kv(0, customer_id);
  const int num = 1000;
  std::vector<Key> keys(num);
  std::vector<float> vals(num);
  for (int i = 0; i < num; ++i) {
    keys[i] = kMaxKey / num * i + static_cast<Key>(customer_id);  // this customer's keys
    vals[i] = static_cast<float>(i % 97 + customer_id);
  }
  const int repeat = 5;
  for (int r = 0; r < repeat; ++r) kv.Wait(kv.Push(keys, vals));
  if (die && MyRank() != 0 && customer_id == customers - 1) std::abort();
  // Every worker node (every customer of every process) has pushed.
  Postoffice::GetWorker(customer_id)->Barrier(customer_id, kWorkerGroup);
  std::vector<float> sums;
  kv.Wait(kv.Pull(keys, &sums));
  for (int i = 0; i < num; ++i)
    CHECK_EQ(sums[i], vals[i] * repeat * processes) << "customer " << customer_id << " key " << i;
  // Customer 0 leaves first; the others keep the servers busy meanwhile,
  // on keys no one pulls.
  if (customer_id != 0) {
    for (Key& k : keys) k += 1000;
    for (int r = 0; r < 50; ++r) kv.Wait(kv.Push(keys, vals));
  }
  std::printf("customer %d of worker process %d: sums exact\n", customer_id, MyRank());
  std::fflush(stdout);
  Finalize(customer_id, false);
}

int main(int argc, char** argv) {
  const int customers = argc > 1 ? std::atoi(argv[1]) : 2;
  die = argc > 2 && std::string(argv[2]) == "die";
  bool noserver = argc > 2 && std::string(argv[2]) == "noserver";
  std::string role = std::getenv("DMLC_ROLE") ? std::getenv("DMLC_ROLE") : "";
  if (role != "worker") {
    Start(0);
    KVServer<float>* server = nullptr;
    if (IsServer() && !noserver) {
      server = new KVServer<float>(0);
      server->set_request_handle(KVServerDefaultHandle<float>());
    }
    RegisterExitCallback([server]() { delete server; });
    Finalize(0, false);
    return 0;
  }
  std::vector<std::thread> threads;
  for (int c = 0; c < customers; ++c) threads.emplace_back(RunCustomer, c, customers);
  for (auto& t : threads) t.join();
  return 0;
}
