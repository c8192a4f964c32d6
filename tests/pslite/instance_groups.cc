// A ps-lite program written against bytedance/ps-lite's API (BytePS's
// communication library): StartPS with a role (worker, server, scheduler
// or joint) and DMLC_GROUP_SIZE instances per process, KVWorker and
// KVServer instances, device-aware SArrays, KVMeta's key and val_len,
// receive buffers registered per worker rank (ENABLE_RECV_BUFFER=1), the
// process-wide barrier, and a GPU array refused with an error. Worker
// instance i pushes one key per request to instance i of every server
// group; the pulled sums must be exact.
//
// usage: DMLC_ROLE=... DMLC_RANK=r pslite_instance_groups   (started by hand)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ps/ps.h"

using namespace ps;

namespace {

const int kKeysPerServer = 3;
const int kFloats = 1024;  // values of one key
const int kRepeat = 4;
bool recv_buffers = false;

int EnvInt(const char* name, int fallback) {
  const char* v = Environment::Get()->find(name);
  return v ? std::atoi(v) : fallback;
}

// Key k of server group r, as bytedance/ps-lite's benchmarks make them.
Key KeyOf(int server_group, int k) {
  return Postoffice::Get()->GetServerKeyRanges()[server_group].begin() + static_cast<Key>(k);
}

SArray<char> NewValues(int dst_device_id) {
  SArray<char> v;
  char* p = new char[kFloats * sizeof(float)];
  v.reset(
      p, kFloats * sizeof(float), [](char* q) { delete[] q; }, CPU, 0, CPU, dst_device_id);
  return v;
}

struct Instance {
  std::mutex mu;
  std::map<Key, std::vector<float>> sums;
  std::map<std::pair<int, Key>, SArray<char>> registered;  // (worker node, key)
};

void Handle(Instance* in, const KVMeta& meta, const KVPairs<char>& data, KVServer<char>* server) {
  CHECK_EQ(data.keys.size(), 1u);
  Key key = data.keys[0];
  CHECK_EQ(meta.key, key) << "KVMeta::key is the request's first key";
  CHECK_LT(Postoffice::IDtoRank(meta.sender), NumWorkers()) << "sender is a worker group's id";
  std::lock_guard<std::mutex> lock(in->mu);
  if (meta.push) {
    CHECK_EQ(static_cast<size_t>(meta.val_len), data.vals.size());
    CHECK_EQ(data.vals.dst_device_type_, CPU);
    CHECK_EQ(data.vals.dst_device_id_, static_cast<int>(key % 3)) << "dst device travels";
    if (recv_buffers) {
      auto it = in->registered.find({meta.sender, key});
      CHECK_NE(it, in->registered.end()) << "no buffer for worker " << meta.sender;
      CHECK(it->second.data() == data.vals.data()) << "push not received into its buffer";
    }
    auto& sum = in->sums[key];
    sum.resize(kFloats);
    const float* v = reinterpret_cast<const float*>(data.vals.data());
    for (int i = 0; i < kFloats; ++i) sum[i] += v[i];
    server->Response(meta);
  } else {
    CHECK_EQ(meta.val_len, static_cast<int>(kFloats * sizeof(float))) << "the pull's destination";
    KVPairs<char> res;
    res.keys = data.keys;
    res.vals.CopyFrom(reinterpret_cast<const char*>(in->sums[key].data()), kFloats * sizeof(float));
    res.lens = SArray<int>(1, static_cast<int>(kFloats * sizeof(float)));
    server->Response(meta, res);
  }
}

std::vector<std::unique_ptr<Instance>> instances;

std::vector<KVServer<char>*> StartServers(int group_size) {
  std::vector<KVServer<char>*> servers;
  for (int i = 0; i < group_size; ++i) {
    instances.push_back(std::make_unique<Instance>());
    Instance* in = instances.back().get();
    auto* server = new KVServer<char>(0, false, i);
    CHECK_EQ(server->instance_idx_, i);
    server->set_request_handle(
        [in](const KVMeta& m, const KVPairs<char>& d, KVServer<char>* s) { Handle(in, m, d, s); });
    if (recv_buffers) {
      int group = MyRank();
      for (int w = 0; w < NumWorkers(); ++w)
        for (int k = 0; k < kKeysPerServer; ++k) {
          SArray<Key> keys(1, KeyOf(group, k));
          SArray<char> vals = NewValues(k);
          SArray<int> lens(1, static_cast<int>(vals.size()));
          server->RegisterRecvBufferWithRank(w, keys, vals, lens);
          int worker_node = Postoffice::GetServer(i)->GroupWorkerRankToInstanceID(w, i);
          in->registered[{Postoffice::WorkerRankToID(w), keys[0]}] = vals;
          PS_VLOG(1) << "instance " << i << " registered key " << keys[0] << " of worker node "
                     << worker_node;
        }
    }
    servers.push_back(server);
  }
  return servers;
}

void Push(int instance) {
  KVWorker<char> kv(0, 0, instance);
  int group = MyRank();
  for (int r = 0; r < kRepeat; ++r) {
    std::vector<int> ts;
    for (int s = 0; s < NumServers(); ++s)
      for (int k = 0; k < kKeysPerServer; ++k) {
        Key key = KeyOf(s, k);
        SArray<Key> keys(1, key);
        SArray<char> vals = NewValues(static_cast<int>(key % 3));
        float* f = reinterpret_cast<float*>(vals.data());
        for (int i = 0; i < kFloats; ++i) f[i] = static_cast<float>((group + 1) * (k + 1) + i % 7);
        SArray<int> lens(1, static_cast<int>(vals.size()));
        ts.push_back(kv.ZPush(keys, vals, lens));
      }
    for (int t : ts) kv.Wait(t);
  }
  // An array in GPU memory is refused at once, with the reason.
  SArray<Key> keys(1, KeyOf(0, 0));
  SArray<char> gpu;
  gpu.reset(
      new char[16], 16, [](char* q) { delete[] q; }, GPU, 0, GPU, 0);
  try {
    kv.ZPush(keys, gpu);
    LOG(FATAL) << "a GPU array was accepted";
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("GPU memory") != std::string::npos) << e.what();
  }
}

void Pull(int instance) {
  KVWorker<char> kv(0, 0, instance);
  for (int s = 0; s < NumServers(); ++s)
    for (int k = 0; k < kKeysPerServer; ++k) {
      SArray<Key> keys(1, KeyOf(s, k));
      SArray<char> out(kFloats * sizeof(float));
      SArray<int> lens;
      kv.Wait(kv.ZPull(keys, &out, &lens));
      CHECK_EQ(lens.size(), 1u);
      const float* f = reinterpret_cast<const float*>(out.data());
      for (int i = 0; i < kFloats; ++i) {
        float want = 0;
        for (int g = 0; g < NumWorkers(); ++g)
          want += static_cast<float>((g + 1) * (k + 1) + i % 7);
        CHECK_EQ(f[i], want * kRepeat) << "server group " << s << " key " << k << " element " << i;
      }
    }
  std::printf("worker instance %d of group %d: sums exact\n", instance, MyRank());
  std::fflush(stdout);
}

void OnInstances(int group_size, void (*fn)(int)) {
  std::vector<std::thread> threads;
  for (int i = 0; i < group_size; ++i) threads.emplace_back(fn, i);
  for (auto& t : threads) t.join();
}

}  // namespace

int main() {
  recv_buffers = EnvInt("ENABLE_RECV_BUFFER", 0) != 0;
  Node::Role role = GetRole(CHECK_NOTNULL(Environment::Get()->find("DMLC_ROLE")));
  int rank = EnvInt("DMLC_RANK", -1);
  int group_size = EnvInt("DMLC_GROUP_SIZE", 1);
  StartPS(0, role, rank, true);
  if (role == Node::SCHEDULER) {
    Finalize(0, role, true);
    return 0;
  }
  if (rank >= 0) CHECK_EQ(MyRank(), rank);
  bool worker = role == Node::WORKER || role == Node::JOINT;
  bool server = role == Node::SERVER || role == Node::JOINT;
  for (int i = 0; i < group_size; ++i) {
    Postoffice* po = worker ? Postoffice::GetWorker(i) : Postoffice::GetServer(i);
    CHECK_EQ(po->my_rank(), MyRank() * group_size + i) << "instance ranks";
    CHECK_EQ(po->group_size(), group_size);
    CHECK_EQ(static_cast<int>(po->GetNodeIDs(kServerGroup).size()), po->num_server_instances());
  }
  std::vector<KVServer<char>*> servers;
  if (server) servers = StartServers(group_size);
  // Buffers are registered before any push.
  Postoffice::Get()->Barrier(0, kWorkerGroup + kServerGroup);
  if (worker) {
    OnInstances(group_size, Push);
    Postoffice::Get()->Barrier(0, kWorkerGroup);  // every push summed
    OnInstances(group_size, Pull);
  }
  Finalize(0, role, true);
  for (auto* s : servers) delete s;
  return 0;
}
