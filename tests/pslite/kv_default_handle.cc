// A ps-lite program (it uses only ps/ps.h): servers run the default handle;
// every worker pushes, pulls and push_pulls through it, and checks the sums
// exactly. Run in every role: caravan-launch --spmd ... -- kv_default_handle
#include <cmath>
#include <cstdio>
#include <vector>

#include "ps/ps.h"

using namespace ps;

static void RunWorker() {
  KVWorker<float> kv(0, 0);
  const int num = 1000;
  const int repeat = 5;
  // Keys spread over the whole key space, so every server gets some.
  std::vector<Key> keys(num);
  for (int i = 0; i < num; ++i) keys[i] = kMaxKey / num * i + 7;
  std::vector<float> vals(num);
  for (int i = 0; i < num; ++i) vals[i] = static_cast<float>(i % 13);

  std::vector<int> ts;
  for (int r = 0; r < repeat; ++r) ts.push_back(kv.Push(keys, vals));
  for (int t : ts) kv.Wait(t);
  // Every worker's pushes must be in before anyone pulls.
  Postoffice::Get()->Barrier(0, kWorkerGroup);

  std::vector<float> pulled;
  kv.Wait(kv.Pull(keys, &pulled));
  CHECK_EQ(pulled.size(), vals.size());
  for (int i = 0; i < num; ++i)
    CHECK_EQ(pulled[i], vals[i] * repeat * NumWorkers()) << "key " << keys[i];
  Postoffice::Get()->Barrier(0, kWorkerGroup);

  // push_pull: the answer includes this push (and maybe others'), never less.
  std::vector<float> out;
  kv.Wait(kv.PushPull(keys, vals, &out));
  for (int i = 0; i < num; ++i) CHECK_GE(out[i], vals[i] * (repeat * NumWorkers() + 1));
  Postoffice::Get()->Barrier(0, kWorkerGroup);
  kv.Wait(kv.Pull(keys, &pulled));
  for (int i = 0; i < num; ++i)
    CHECK_EQ(pulled[i], vals[i] * (repeat + 1) * NumWorkers()) << "key " << keys[i];
  std::printf("worker %d: push, pull and push_pull sums exact\n", MyRank());
}

int main() {
  Start(0);
  if (IsServer()) {
    auto server = new KVServer<float>(0);
    server->set_request_handle(KVServerDefaultHandle<float>());
    RegisterExitCallback([server]() { delete server; });
  }
  if (IsWorker()) RunWorker();
  Finalize(0, true);
  return 0;
}
