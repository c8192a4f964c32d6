// Key-value applications: KVWorker pushes and pulls (keys, values, lengths)
// to and from the servers, each key going to the server whose range holds
// it; KVServer answers with an application-defined handler.
#ifndef PS_KV_APP_H_
#define PS_KV_APP_H_

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ps/base.h"
#include "ps/simple_app.h"

namespace ps {

template <typename Val>
struct KVPairs {
  SArray<Key> keys;  // sorted, unique
  SArray<Val> vals;  // all values, key after key
  SArray<int> lens;  // values per key; empty when every key has the same number
  int priority = 0;
};

struct KVMeta {
  int cmd;
  bool push;
  bool pull;
  int sender;  // the worker's node id (its group's first, with DMLC_GROUP_SIZE)
  int timestamp;
  int customer_id;
  // bytedance/ps-lite: the request's first key and its values' length in
  // elements (of a pull: the length of the worker's destination); addr and
  // option are always 0 (set by its RDMA vans, not by programs).
  Key key;
  uint64_t addr;
  int val_len;
  int option;
};

template <typename Val>
class KVWorker : public SimpleApp {
 public:
  using SimpleApp::obj_;
  using Callback = std::function<void()>;
  using SlicedKVs = std::vector<std::pair<bool, KVPairs<Val>>>;
  using Slicer = std::function<void(const KVPairs<Val>& send, const std::vector<Range>& ranges,
                                    SlicedKVs* sliced)>;

  // dmlc/ps-lite: in a process whose Start(customer_id) made a worker node
  // of its own, that node; else Postoffice::Get().
  explicit KVWorker(int app_id, int customer_id) : SimpleApp() {
    using namespace std::placeholders;
    slicer_ = std::bind(&KVWorker<Val>::DefaultSlicer, this, _1, _2, _3);
    obj_ = new Customer(app_id, customer_id, std::bind(&KVWorker<Val>::Process, this, _1));
    MarkReady();
  }
  // bytedance/ps-lite: worker instance `instance_idx` of this process
  // (DMLC_GROUP_SIZE), which talks to the same instance of every server.
  KVWorker(int app_id, int customer_id, int instance_idx) : SimpleApp() {
    using namespace std::placeholders;
    slicer_ = std::bind(&KVWorker<Val>::DefaultSlicer, this, _1, _2, _3);
    obj_ = new Customer(app_id, customer_id, std::bind(&KVWorker<Val>::Process, this, _1),
                        Postoffice::GetWorker(instance_idx));
    MarkReady();
  }
  virtual ~KVWorker() {
    delete obj_;
    obj_ = nullptr;
  }

  // Copying forms: the vectors may be reused as soon as the call returns.
  int Push(const std::vector<Key>& keys, const std::vector<Val>& vals,
           const std::vector<int>& lens = {}, int cmd = 0, const Callback& cb = nullptr,
           int priority = 0) {
    return ZPush(SArray<Key>(keys), SArray<Val>(vals), SArray<int>(lens), cmd, cb, priority);
  }
  // `vals` (and `lens`) are filled when Wait() returns or in the callback.
  int Pull(const std::vector<Key>& keys, std::vector<Val>* vals, std::vector<int>* lens = nullptr,
           int cmd = 0, const Callback& cb = nullptr, int priority = 0) {
    return PullInto(SArray<Key>(keys), vals, lens, cmd, cb, priority);
  }
  int PushPull(const std::vector<Key>& keys, const std::vector<Val>& vals, std::vector<Val>* outs,
               std::vector<int>* lens = nullptr, int cmd = 0, const Callback& cb = nullptr,
               int priority = 0) {
    CHECK_NOTNULL(outs);
    if (outs->empty()) outs->resize(vals.size());
    CHECK_EQ(vals.size(), outs->size());
    SArray<Key> skeys(keys);
    int ts = AddPullCB(skeys, outs, lens, cmd, cb);
    KVPairs<Val> kvs;
    kvs.keys = skeys;
    kvs.vals = SArray<Val>(vals);
    kvs.priority = priority;
    if (lens) kvs.lens = SArray<int>(*lens);
    Send(ts, true, true, cmd, kvs);
    return ts;
  }

  // Blocks until the request `timestamp` completed (and its callback ran).
  void Wait(int timestamp) { obj_->WaitRequest(timestamp); }

  // Zero-copy forms: the arrays are shared, not copied; do not change them
  // until Wait() returns.
  int ZPush(const SArray<Key>& keys, const SArray<Val>& vals, const SArray<int>& lens = {},
            int cmd = 0, const Callback& cb = nullptr, int priority = 0) {
    int ts = obj_->NewRequest(kServerGroup);
    AddCallback(ts, cb);
    KVPairs<Val> kvs;
    kvs.keys = keys;
    kvs.vals = vals;
    kvs.lens = lens;
    kvs.priority = priority;
    Send(ts, true, false, cmd, kvs);
    return ts;
  }
  int ZPull(const SArray<Key>& keys, SArray<Val>* vals, SArray<int>* lens = nullptr, int cmd = 0,
            const Callback& cb = nullptr, int priority = 0) {
    return PullInto(keys, vals, lens, cmd, cb, priority);
  }
  int ZPushPull(const SArray<Key>& keys, const SArray<Val>& vals, SArray<Val>* outs,
                SArray<int>* lens = nullptr, int cmd = 0, const Callback& cb = nullptr,
                int priority = 0) {
    int ts = AddPullCB(keys, outs, lens, cmd, cb);
    KVPairs<Val> kvs;
    kvs.keys = keys;
    kvs.vals = vals;
    kvs.priority = priority;
    if (lens) kvs.lens = *lens;
    Send(ts, true, true, cmd, kvs);
    return ts;
  }

  void set_slicer(const Slicer& slicer) {
    CHECK(slicer);
    slicer_ = slicer;
  }

 private:
  // Splits a request by server key range: sliced[i] is what server i gets,
  // first = false when it gets nothing.
  void DefaultSlicer(const KVPairs<Val>& send, const std::vector<Range>& ranges,
                     SlicedKVs* sliced) {
    sliced->resize(ranges.size());
    size_t n = ranges.size();
    std::vector<size_t> pos(n + 1);
    const Key* begin = send.keys.begin();
    const Key* end = send.keys.end();
    for (size_t i = 0; i < n; ++i) {
      if (i == 0) {
        pos[0] = static_cast<size_t>(std::lower_bound(begin, end, ranges[0].begin()) - begin);
        begin += pos[0];
      } else {
        CHECK_EQ(ranges[i - 1].end(), ranges[i].begin());
      }
      size_t len = static_cast<size_t>(std::lower_bound(begin, end, ranges[i].end()) - begin);
      begin += len;
      pos[i + 1] = pos[i] + len;
      (*sliced)[i].first = len != 0;
    }
    CHECK_EQ(pos[n], send.keys.size()) << "keys must be sorted and inside the server ranges";
    if (send.keys.empty()) return;
    size_t k = 0, val_begin = 0, val_end = 0;
    if (send.lens.empty()) {
      k = send.vals.size() / send.keys.size();
      CHECK_EQ(k * send.keys.size(), send.vals.size())
          << "values are not a whole number per key (give lens)";
    } else {
      CHECK_EQ(send.keys.size(), send.lens.size());
    }
    for (size_t i = 0; i < n; ++i) {
      if (!(*sliced)[i].first) continue;
      KVPairs<Val>& kv = (*sliced)[i].second;
      kv.keys = send.keys.segment(pos[i], pos[i + 1]);
      kv.priority = send.priority;
      if (send.lens.size()) {
        kv.lens = send.lens.segment(pos[i], pos[i + 1]);
        for (int l : kv.lens) val_end += static_cast<size_t>(l);
        kv.vals = send.vals.segment(val_begin, val_end);
        val_begin = val_end;
      } else if (send.vals.size()) {
        kv.vals = send.vals.segment(pos[i] * k, pos[i + 1] * k);
      }
    }
  }

  // `pull_len`: for a pull, the elements the destination holds, told to
  // every server as bytedance/ps-lite's val_len.
  void Send(int timestamp, bool push, bool pull, int cmd, const KVPairs<Val>& kvs,
            int pull_len = 0) {
    Postoffice* po = obj_->postoffice();
    SlicedKVs sliced;
    slicer_(kvs, po->GetServerKeyRanges(), &sliced);
    int skipped = 0;
    for (auto& s : sliced) skipped += s.first ? 0 : 1;
    // Servers that get no key count as answered at once.
    obj_->AddResponse(timestamp, skipped);
    if (static_cast<size_t>(skipped) == sliced.size()) RunCallback(timestamp);
    for (size_t i = 0; i < sliced.size(); ++i) {
      if (!sliced[i].first) continue;
      const KVPairs<Val>& kv = sliced[i].second;
      Message msg;
      msg.meta.app_id = obj_->app_id();
      msg.meta.customer_id = obj_->customer_id();
      msg.meta.request = true;
      msg.meta.push = push;
      msg.meta.pull = pull;
      msg.meta.head = cmd;
      msg.meta.timestamp = timestamp;
      msg.meta.recver = po->GroupServerRankToInstanceID(static_cast<int>(i), po->instance_idx());
      msg.meta.priority = kv.priority;
      msg.meta.src_dev_type = kv.vals.src_device_type_;
      msg.meta.src_dev_id = kv.vals.src_device_id_;
      msg.meta.dst_dev_type = kv.vals.dst_device_type_;
      msg.meta.dst_dev_id = kv.vals.dst_device_id_;
      msg.meta.key = kv.keys.empty() ? 0 : kv.keys[0];
      msg.meta.val_len = push ? static_cast<int>(kv.vals.size()) : pull_len;
      msg.meta.pull_bytes = static_cast<size_t>(pull_len) * sizeof(Val);
      msg.AddData(kv.keys);
      msg.AddData(kv.vals);
      if (kv.lens.size()) msg.AddData(kv.lens);
      po->van()->Send(msg);
    }
  }

  void Process(const Message& msg) {
    if (msg.meta.simple_app) {
      SimpleApp::Process(msg);
      return;
    }
    CHECK(WaitReady([] { return true; })) << "KVWorker never finished construction";
    int ts = msg.meta.timestamp;
    if (msg.meta.pull) {
      CHECK_GE(msg.data.size(), 2u) << "a pull response without keys and values";
      KVPairs<Val> kvs;
      kvs.keys = msg.data[0];
      kvs.vals = msg.data[1];
      if (msg.data.size() > 2) kvs.lens = msg.data[2];
      std::lock_guard<std::mutex> lock(mu_);
      recv_kvs_[ts].push_back(kvs);
    }
    // The customer counts this response after Process returns.
    if (obj_->NumResponse(ts) == static_cast<int>(obj_->postoffice()->GetServerKeyRanges().size()) - 1)
      RunCallback(ts);
  }

  void AddCallback(int timestamp, const Callback& cb) {
    if (!cb) return;
    std::lock_guard<std::mutex> lock(mu_);
    callbacks_[timestamp] = cb;
  }

  void RunCallback(int timestamp) {
    Callback cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = callbacks_.find(timestamp);
      if (it == callbacks_.end()) return;
      cb = std::move(it->second);
      callbacks_.erase(it);
    }
    cb();
  }

  // A pull into `vals` (a std::vector or an SArray), told to the servers
  // with its length.
  template <typename C, typename D>
  int PullInto(const SArray<Key>& keys, C* vals, D* lens, int cmd, const Callback& cb,
               int priority) {
    int ts = AddPullCB(keys, vals, lens, cmd, cb);
    KVPairs<Val> kvs;
    kvs.keys = keys;
    kvs.priority = priority;
    Send(ts, false, true, cmd, kvs, vals ? static_cast<int>(vals->size()) : 0);
    return ts;
  }

  // Registers the callback that gathers the servers' answers into vals
  // (and lens) in key order, then runs the user's callback.
  template <typename C, typename D>
  int AddPullCB(const SArray<Key>& keys, C* vals, D* lens, int cmd, const Callback& cb) {
    int ts = obj_->NewRequest(kServerGroup);
    AddCallback(ts, [this, ts, keys, vals, lens, cb]() mutable {
      std::vector<KVPairs<Val>> kvs;
      {
        std::lock_guard<std::mutex> lock(mu_);
        kvs = std::move(recv_kvs_[ts]);
        recv_kvs_.erase(ts);
      }
      size_t total_keys = 0, total_vals = 0;
      for (const auto& s : kvs) {
        if (s.keys.empty()) continue;
        Range r = FindRange(keys, s.keys.front(), s.keys.back() + 1);
        CHECK_EQ(r.size(), s.keys.size()) << "a server answered keys that were not asked for";
        if (lens) CHECK_EQ(s.lens.size(), s.keys.size()) << "a server answered without lens";
        total_keys += s.keys.size();
        total_vals += s.vals.size();
      }
      CHECK_EQ(total_keys, keys.size()) << "some servers did not answer every key";
      std::sort(kvs.begin(), kvs.end(), [](const KVPairs<Val>& a, const KVPairs<Val>& b) {
        return a.keys.front() < b.keys.front();
      });
      CHECK_NOTNULL(vals);
      if (vals->empty()) {
        vals->resize(total_vals);
      } else {
        CHECK_EQ(vals->size(), total_vals);
      }
      Val* out = vals->data();
      int* out_lens = nullptr;
      if (lens) {
        if (lens->empty()) {
          lens->resize(keys.size());
        } else {
          CHECK_EQ(lens->size(), keys.size());
        }
        out_lens = lens->data();
      }
      for (const auto& s : kvs) {
        if (s.vals.size()) std::memcpy(out, s.vals.data(), s.vals.size() * sizeof(Val));
        out += s.vals.size();
        if (out_lens) {
          std::memcpy(out_lens, s.lens.data(), s.lens.size() * sizeof(int));
          out_lens += s.lens.size();
        }
      }
      if (cb) cb();
    });
    return ts;
  }

  std::unordered_map<int, std::vector<KVPairs<Val>>> recv_kvs_;
  std::unordered_map<int, Callback> callbacks_;
  std::mutex mu_;
  Slicer slicer_;
};

template <typename Val>
class KVServer : public SimpleApp {
 public:
  // The server's customer id is its app id, as in ps-lite. bytedance/
  // ps-lite's arguments pick the node: the scheduler, or server instance
  // `instance_idx` of this process (DMLC_GROUP_SIZE).
  explicit KVServer(int app_id, bool is_scheduler = false, int instance_idx = 0)
      : SimpleApp(), instance_idx_(instance_idx), app_id_(app_id) {
    using namespace std::placeholders;
    Postoffice* po = is_scheduler ? Postoffice::GetScheduler() : Postoffice::GetServer(instance_idx);
    CHECK(po) << "KVServer(" << app_id << ", is_scheduler=" << is_scheduler
              << "): this process is not the scheduler";
    obj_ = new Customer(app_id, app_id, std::bind(&KVServer<Val>::Process, this, _1), po);
    MarkReady();
  }
  virtual ~KVServer() {
    delete obj_;
    obj_ = nullptr;
  }

  using ReqHandle =
      std::function<void(const KVMeta& req_meta, const KVPairs<Val>& req_data, KVServer* server)>;
  // Requests that arrive before this is called wait for it.
  void set_request_handle(const ReqHandle& request_handle) {
    CHECK(request_handle) << "invalid request handle";
    {
      std::lock_guard<std::mutex> lock(gate_mu_);
      request_handle_ = request_handle;
    }
    NotifyGate();
  }

  // Answers a request; every request must be answered exactly once.
  void Response(const KVMeta& req, const KVPairs<Val>& res = KVPairs<Val>()) {
    Message msg;
    msg.meta.app_id = obj_->app_id();
    msg.meta.customer_id = req.customer_id;
    msg.meta.request = false;
    msg.meta.push = req.push;
    msg.meta.pull = req.pull;
    msg.meta.head = req.cmd;
    msg.meta.timestamp = req.timestamp;
    Postoffice* po = obj_->postoffice();
    msg.meta.recver = po->GroupWorkerRankToInstanceID(Postoffice::IDtoRank(req.sender), po->instance_idx());
    msg.meta.key = req.key;
    msg.meta.val_len = static_cast<int>(res.vals.size());
    if (res.keys.size()) {
      msg.AddData(res.keys);
      msg.AddData(res.vals);
      if (res.lens.size()) msg.AddData(res.lens);
    }
    po->van()->Send(msg);
  }

  // bytedance/ps-lite: pushes of `keys` from worker node `worker_id` (or
  // the worker of rank `worker_rank`) arrive in `vals`' memory.
  void RegisterRecvBuffer(int worker_id, SArray<Key>& keys, const SArray<Val>& vals,
                          const SArray<int>& lens = {}, int cmd = 0) {
    Message msg;
    msg.meta.request = true;
    msg.meta.push = true;
    msg.meta.head = cmd;
    msg.meta.sender = worker_id;
    CHECK(!keys.empty()) << "RegisterRecvBuffer without a key";
    msg.meta.key = keys[0];
    msg.AddData(keys);
    msg.AddData(vals);
    if (!lens.empty()) msg.AddData(lens);
    obj_->postoffice()->van()->RegisterRecvBuffer(msg);
  }
  void RegisterRecvBufferWithRank(int worker_rank, SArray<Key>& keys, const SArray<Val>& vals,
                                  const SArray<int>& lens = {}, int cmd = 0) {
    Postoffice* po = obj_->postoffice();
    RegisterRecvBuffer(po->GroupWorkerRankToInstanceID(worker_rank, po->instance_idx()), keys,
                       vals, lens, cmd);
  }

  // This server's instance in its process (bytedance/ps-lite).
  int instance_idx_;

 private:
  void Process(const Message& msg) {
    if (msg.meta.simple_app) {
      SimpleApp::Process(msg);
      return;
    }
    KVMeta meta;
    meta.cmd = msg.meta.head;
    meta.push = msg.meta.push;
    meta.pull = msg.meta.pull;
    meta.timestamp = msg.meta.timestamp;
    meta.customer_id = msg.meta.customer_id;
    meta.key = msg.meta.key;
    meta.addr = 0;
    meta.val_len = msg.meta.val_len;
    meta.option = 0;
    KVPairs<Val> data;
    if (!msg.data.empty()) {
      CHECK_GE(msg.data.size(), 2u) << "a request with keys but no values";
      data.keys = msg.data[0];
      data.vals = msg.data[1];
      if (msg.data.size() > 2) {
        CHECK_EQ(msg.data.size(), 3u);
        data.lens = msg.data[2];
        CHECK_EQ(data.lens.size(), data.keys.size());
      }
    }
    CHECK(WaitReady([this] { return static_cast<bool>(request_handle_); }))
        << "KVServer " << app_id_ << " got a request but set_request_handle() was never called";
    // With DMLC_GROUP_SIZE, the handler sees the worker's group (its first
    // node), as in bytedance/ps-lite; obj_ is set once the app is ready.
    meta.sender =
        Postoffice::WorkerRankToID(obj_->postoffice()->InstanceIDtoGroupRank(msg.meta.sender));
    // Called in place, never copied: a stateful handle (the default one's
    // store) must see every request.
    request_handle_(meta, data, this);
  }

  int app_id_;
  ReqHandle request_handle_;
};

// Sums pushes into a store and answers pulls from it, one value per key.
template <typename Val>
struct KVServerDefaultHandle {
  void operator()(const KVMeta& req_meta, const KVPairs<Val>& req_data, KVServer<Val>* server) {
    size_t n = req_data.keys.size();
    KVPairs<Val> res;
    if (req_meta.push) CHECK_EQ(n, req_data.vals.size()) << "the default handle takes one value per key";
    if (req_meta.pull) {
      res.keys = req_data.keys;
      res.vals.resize(n);
    }
    for (size_t i = 0; i < n; ++i) {
      Key key = req_data.keys[static_cast<int>(i)];
      if (req_meta.push) store[key] += req_data.vals[static_cast<int>(i)];
      if (req_meta.pull) res.vals[static_cast<int>(i)] = store[key];
    }
    server->Response(req_meta, res);
  }
  std::unordered_map<Key, Val> store;
};

}  // namespace ps

#endif  // PS_KV_APP_H_
