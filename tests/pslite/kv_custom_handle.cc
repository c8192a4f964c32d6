// A ps-lite program with a custom server handle: values of varying length
// per key (lens), zero-copy ZPush/ZPull/ZPushPull, a command code, and
// callbacks. The server keeps, per key, a vector summed element-wise.
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ps/ps.h"

using namespace ps;

struct VectorStore {
  std::mutex mu;
  std::unordered_map<Key, std::vector<double>> store;
  void operator()(const KVMeta& meta, const KVPairs<double>& data, KVServer<double>* server) {
    CHECK_EQ(meta.cmd, 42) << "the worker's command code must arrive";
    // A pull carries keys only; a push carries the values and their lens.
    if (meta.push) CHECK_EQ(data.lens.size(), data.keys.size());
    KVPairs<double> res;
    std::lock_guard<std::mutex> lock(mu);
    size_t off = 0;
    for (size_t i = 0; meta.push && i < data.keys.size(); ++i) {
      int len = data.lens[static_cast<int>(i)];
      auto& v = store[data.keys[static_cast<int>(i)]];
      if (v.empty()) v.assign(static_cast<size_t>(len), 0.0);
      CHECK_EQ(v.size(), static_cast<size_t>(len));
      for (int j = 0; j < len; ++j)
        v[static_cast<size_t>(j)] += data.vals[static_cast<int>(off) + j];
      off += static_cast<size_t>(len);
    }
    if (meta.pull) {
      res.keys = data.keys;
      for (size_t i = 0; i < data.keys.size(); ++i) {
        auto& v = store[data.keys[static_cast<int>(i)]];
        res.lens.push_back(static_cast<int>(v.size()));
        for (double x : v) res.vals.push_back(x);
      }
    }
    server->Response(meta, res);
  }
};

static void RunWorker() {
  KVWorker<double> kv(0, 0);
  const int num = 64;
  SArray<Key> keys(num);
  SArray<int> lens(num);
  int total = 0;
  for (int i = 0; i < num; ++i) {
    keys[i] = kMaxKey / num * i + 3;
    lens[i] = 1 + (i % 5);  // 1..5 values per key
    total += lens[i];
  }
  SArray<double> vals(total);
  for (int i = 0; i < total; ++i) vals[i] = 0.5 * (i % 9);

  std::atomic<int> callbacks{0};
  int ts = kv.ZPush(keys, vals, lens, 42, [&] { callbacks++; });
  kv.Wait(ts);
  CHECK_EQ(callbacks.load(), 1) << "the push callback must run once before Wait returns";
  Postoffice::Get()->Barrier(0, kWorkerGroup);

  SArray<double> pulled;
  SArray<int> pulled_lens;
  kv.Wait(kv.ZPull(keys, &pulled, &pulled_lens, 42, [&] { callbacks++; }));
  CHECK_EQ(callbacks.load(), 2);
  CHECK_EQ(pulled_lens.size(), lens.size());
  for (int i = 0; i < num; ++i) CHECK_EQ(pulled_lens[i], lens[i]);
  for (int i = 0; i < total; ++i) CHECK_EQ(pulled[i], vals[i] * NumWorkers()) << "value " << i;
  Postoffice::Get()->Barrier(0, kWorkerGroup);

  SArray<double> out;
  SArray<int> out_lens(lens);
  kv.Wait(kv.ZPushPull(keys, vals, &out, &out_lens, 42));
  for (int i = 0; i < total; ++i) CHECK_GE(out[i], vals[i] * (NumWorkers() + 1));
  std::printf("worker %d: lens, zero-copy calls, command and callbacks correct\n", MyRank());
}

int main() {
  Start(0);
  if (IsServer()) {
    auto server = new KVServer<double>(0);
    auto store = std::make_shared<VectorStore>();
    server->set_request_handle([store](const KVMeta& meta, const KVPairs<double>& data,
                                       KVServer<double>* srv) { (*store)(meta, data, srv); });
    RegisterExitCallback([server]() { delete server; });
  }
  if (IsWorker()) RunWorker();
  Finalize(0, true);
  return 0;
}
