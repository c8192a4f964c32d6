#include "engine/server/sum_server.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/metrics.h"
#include "engine/base/thread_name.h"
#include "engine/control/node_info.h"
#include "engine/ipc/segment_names.h"
#include "engine/kv/sample_log.h"
#include "engine/server/push_pull_request.h"

namespace caravan {

SumServer::SumServer(KVEndpoint& kv, Reducer& reducer, const JobConfig& config)
    : kv_(kv),
      num_workers_(config.num_workers),
      schedule_(config.server_enable_schedule),
      async_(config.enable_async),
      ipc_(config.enable_ipc),
      segments_(config.num_workers),
      orphans_(ipc::server_prefix(config.root_uri, config.root_port, kv.id())),
      answers_(
          kv, config.num_workers,
          Timeline::from_config(config,
                                config.trace_dir + "/server" +
                                    std::to_string((kv.id() - server_id(0)) / 2) + "/comm.json",
                                "server " + std::to_string((kv.id() - server_id(0)) / 2))),
      context_{answers_, reducer, config.plugin_path} {
  for (int i = 0; i < config.server_sum_threads; ++i) {
    sum_threads_.push_back(std::make_unique<SumThread>());
    SumThread* t = sum_threads_.back().get();
    t->thread = std::thread([this, t] { run(*t); });
  }
  CARAVAN_LOG(INFO) << (async_ ? "asynchronous" : "synchronous") << " summation on "
                    << sum_threads_.size() << " summation thread(s)"
                    << (schedule_ ? ", keys furthest behind first" : "")
                    << (ipc_ ? "; workers on this host may use shared memory" : "");
}

SumServer::~SumServer() { clear(); }

void SumServer::clear() {
  std::call_once(stopped_, [this] {
    for (auto& t : sum_threads_) {
      {
        std::lock_guard<std::mutex> lock(t->mu);
        t->stop = true;
      }
      t->cv.notify_all();
    }
    for (auto& t : sum_threads_)
      if (t->thread.joinable()) t->thread.join();
    for (auto& t : sum_threads_) {
      t->queue.clear();
      t->keys.clear();
    }
    if (!ipc_) return;
    // A worker that died between making a segment and this server mapping
    // it left the name behind, and no one else knows it is garbage.
    if (size_t n = ipc::remove_segments(orphans_)) {
      CARAVAN_LOG(WARNING) << "removed " << n << " shared-memory segment(s) " << orphans_
                           << "* that a worker made but this server never mapped";
    }
  });
}

void SumServer::attach(const KVMessage& req, int rank) {
  if (!ipc_)
    return answers_.refuse(req, CARAVAN_ERR_SERVER,
                           "BYTEPS_ENABLE_IPC is not set on this server (set it on every node)");
  ipc::AttachRequest a;
  try {
    a = ipc::decode_attach(req.vals.data, req.vals.len);
    segments_.attach(rank, a);
  } catch (const std::exception& e) {
    return answers_.refuse(req, CARAVAN_ERR_SERVER, e.what());
  }
  CARAVAN_LOG(INFO) << "worker " << rank << ": mapped its shared-memory segment " << a.index << " ("
                    << a.segment.bytes << " bytes) and removed its name " << a.segment.name;
  KVMessage ok;
  kv_.respond(req.head, std::move(ok), nullptr);
}

void SumServer::handle(KVMessage&& req) {
  const wire::Header& h = req.head;
  int rank = -1;
  if (!worker_rank_of(h.sender, num_workers_, &rank))
    return answers_.refuse(req, CARAVAN_ERR_SERVER,
                           "node " + std::to_string(h.sender) + " is not a worker of this job");
  if ((h.flags & wire::kShm) && !(h.flags & (wire::kPush | wire::kPull))) return attach(req, rank);
  Source source;
  if (h.flags & wire::kShm) {
    try {
      source.place = ipc::decode_descriptor(req.vals.data, req.vals.len);
      source.slot = segments_.resolve(rank, *source.place);
    } catch (const std::exception& e) {
      return answers_.refuse(req, CARAVAN_ERR_SERVER, e.what());
    }
    req.vals = source.slot;
  }
  PushPullRequest checked;
  std::string why;
  if (!parse_push_pull_request(req, num_workers_, &checked, &why))
    return answers_.refuse(req, CARAVAN_ERR_SERVER, why);
  metrics::registry().server_pushes.add();
  metrics::registry().server_push_bytes.add(req.vals.len);
  SumThread*& t = owner_[checked.key];
  if (!t) {
    t = sum_threads_.front().get();
    for (auto& c : sum_threads_)
      if (c->bytes < t->bytes) t = c.get();
    t->bytes += req.vals.len;
  }
  Push q{std::move(req), checked, sequence_++, std::move(source),
         answers_.timeline() ? Timeline::now_us() : 0};
  {
    std::lock_guard<std::mutex> lock(t->mu);
    // A small push to an idle summation thread is summed here: handing it
    // over would cost a thread wake-up, more than the sum itself (a 4 KB
    // push_pull's round trip is mostly wake-ups). Compressed pushes and
    // broadcasts always go to their thread.
    bool inline_sum = !t->busy && t->queue.empty() && !t->stop &&
                      q.request.vals.len <= kInlineSumBytes && !checked.compressed &&
                      checked.root < 0;
    if (!inline_sum) {
      t->queue.push_back(std::move(q));
      t->cv.notify_one();
      return;
    }
    t->busy = true;
  }
  run_one(*t, std::move(q));
  std::lock_guard<std::mutex> lock(t->mu);
  t->busy = false;
  if (!t->queue.empty()) t->cv.notify_one();
}

void SumServer::run_one(SumThread& t, Push&& q) {
  try {
    process(t, std::move(q));
  } catch (const std::exception& ex) {
    CARAVAN_LOG(ERROR) << "server: summing a request failed: " << ex.what();
  }
}

Push SumServer::take(SumThread& t) {
  size_t best = 0;
  if (schedule_) {
    // The key with the fewest finished rounds is the one whose workers wait
    // longest; among equals, arrival order.
    uint64_t best_rounds = UINT64_MAX;
    for (size_t i = 0; i < t.queue.size(); ++i) {
      uint64_t key = t.queue[i].checked.key;
      auto it = t.keys.find(key);
      uint64_t rounds = it == t.keys.end() ? 0 : it->second.round.number();
      if (rounds < best_rounds) {
        best_rounds = rounds;
        best = i;
      }
    }
  }
  Push q = std::move(t.queue[best]);
  t.queue.erase(t.queue.begin() + static_cast<std::ptrdiff_t>(best));
  return q;
}

void SumServer::run(SumThread& t) {
  name_this_thread("cv-sum");
  std::unique_lock<std::mutex> lock(t.mu);
  for (;;) {
    t.cv.wait(lock, [&] { return t.stop || (!t.queue.empty() && !t.busy); });
    if (t.stop) return;
    Push q = take(t);
    t.busy = true;
    lock.unlock();
    run_one(t, std::move(q));
    lock.lock();
    t.busy = false;
  }
}

std::unique_ptr<KeyKind> SumServer::kind_for(KeyState& k, uint64_t key, const Push& first) {
  if (first.checked.root >= 0) return make_relay_kind(context_);
  if (async_) return make_async_kind(context_);
  if (!first.checked.compressed) return make_sum_kind(context_);
  try {
    return make_compressed_kind(context_, first);
  } catch (const std::exception& e) {
    poison(k, answers_,
           std::string("cannot sum compressed key ") + std::to_string(key) + " here: " + e.what());
    return nullptr;
  }
}

void SumServer::process(SumThread& t, Push&& q) {
  const KVMessage& req = q.request;
  const wire::Header& h = req.head;
  int rank = q.checked.rank;
  uint64_t key = q.checked.key;
  CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
      << "sample key " << key << " receive from worker " << rank << ": "
      << sample_values(req.vals.data, req.vals.len, h.dtype);
  KeyState& k = t.keys.try_emplace(key, num_workers_).first->second;
  const bool broadcast = q.checked.root >= 0;
  if (!k.kind && k.poisoned.empty()) {
    k.broadcast = broadcast;
    if (!broadcast) {
      k.bytes = q.checked.count * q.checked.element_bytes;
      k.dtype = h.dtype;
      k.compression = q.checked.compression;
    }
    k.kind = kind_for(k, key, q);
  } else if (k.poisoned.empty() && k.broadcast != broadcast) {
    poison(k, answers_,
           "key " + std::to_string(key) + " was " + (k.broadcast ? "broadcast" : "push_pulled") +
               ", but worker " + std::to_string(rank) + " " +
               (broadcast ? "broadcasts" : "push_pulls") +
               " it (one tensor name used for both on different workers)");
  } else if (k.poisoned.empty() && !broadcast) {
    const size_t bytes = q.checked.count * q.checked.element_bytes;
    auto said = [](const std::string& c) { return c.empty() ? std::string("none") : c; };
    if (k.bytes != bytes || k.dtype != h.dtype)
      poison(k, answers_,
             "key " + std::to_string(key) + " holds " +
                 std::to_string(k.bytes / dtype_size(k.dtype)) + " " + dtype_name(k.dtype) +
                 " elements, but worker " + std::to_string(rank) + " pushed " +
                 std::to_string(q.checked.count) + " " + dtype_name(h.dtype) +
                 " (the same tensor name with different sizes or dtypes on two workers)");
    else if (k.compression != q.checked.compression)
      poison(k, answers_,
             "key " + std::to_string(key) + " was pushed with compression parameters '" +
                 said(k.compression) + "', but worker " + std::to_string(rank) +
                 " pushes it with '" + said(q.checked.compression) +
                 "' (declare the tensor with the same parameters on every worker)");
  }
  if (!k.poisoned.empty()) return answers_.refuse(req, CARAVAN_ERR_MISMATCH, k.poisoned);
  k.kind->push(k, key, std::move(q));
}

}  // namespace caravan
