#include "engine/base/metrics.h"
#include "engine/server/sum_server.h"

#include "engine/server/push_pull_request.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/control/node_info.h"
#include "engine/ipc/segment_names.h"
#include "engine/kv/sample_log.h"

namespace caravan {

SumServer::SumServer(KVEndpoint& kv, Reducer& reducer, const JobConfig& config)
    : kv_(kv),
      reducer_(reducer),
      num_workers_(config.num_workers),
      schedule_(config.server_enable_schedule),
      async_(config.enable_async),
      ipc_(config.enable_ipc),
      plugin_path_(config.plugin_path),
      segments_(config.num_workers),
      orphans_(ipc::server_prefix(config.root_uri, config.root_port, kv.id())) {
  int rank = (kv.id() - server_id(0)) / 2;
  timeline_ = Timeline::from_config(
      config, config.trace_dir + "/server" + std::to_string(rank) + "/comm.json",
      "server " + std::to_string(rank));
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

void SumServer::refuse(const KVMessage& request, int code, const std::string& why) {
  CARAVAN_LOG(WARNING) << "refusing a request from node " << request.head.sender << " ("
                       << request.peer << "): " << why;
  answer_error(request.head, code, why);
}

void SumServer::answer_error(const wire::Header& request, int code, const std::string& why) {
  KVMessage r;
  r.head.status = code;
  auto text = std::make_shared<std::string>(why);
  r.vals = Blob{text->data(), text->size(), text};
  kv_.respond(request, std::move(r), nullptr);
}

void SumServer::answer(const wire::Header& request, uint64_t key, const Blob& vals,
                       TracedRound traced, uint32_t flags) {
  KVMessage out;
  out.head.flags = flags;
  auto key_copy = std::make_shared<uint64_t>(key);
  out.keys = Blob{key_copy.get(), sizeof(uint64_t), key_copy};
  out.vals = vals;  // shares ownership: freed after the last send
  out.head.dtype = request.dtype;
  KVEndpoint::SentHandler on_sent;
  if (traced.round >= 0) {
    // The answer's time on the wire: from the round's sum to the van done.
    timeline_->begin(static_cast<int>(traced.round));
    on_sent = [timeline = timeline_, row = trace_row(key),
               args = trace_args(key, static_cast<uint64_t>(traced.round), request, vals.len),
               from = traced.complete_us](caravan_status) mutable {
      timeline->add("answer", row, from, Timeline::now_us(), std::move(args));
      timeline->end();
    };
  }
  kv_.respond(request, std::move(out), std::move(on_sent));
}

void SumServer::answer_in_place(const wire::Header& request, uint64_t key,
                                const ipc::SlotDescriptor& at, TracedRound traced) {
  auto where = std::make_shared<std::vector<uint8_t>>(ipc::encode_descriptor(at));
  answer(request, key, Blob{where->data(), where->size(), where}, traced);
}

std::string SumServer::trace_row(uint64_t key) { return "key " + std::to_string(key); }

std::string SumServer::trace_args(uint64_t key, uint64_t round, const wire::Header& sender,
                                  size_t bytes) const {
  int rank = -1;
  worker_rank_of(sender.sender, num_workers_, &rank);
  return "\"key\":\"" + std::to_string(key) + "\",\"bytes\":" + std::to_string(bytes) +
         ",\"priority\":" + std::to_string(sender.priority) + ",\"peer\":\"worker " +
         std::to_string(rank) + "\",\"step\":" + std::to_string(round);
}

void SumServer::trace(const char* stage, uint64_t key, uint64_t round, const wire::Header& sender,
                      size_t bytes, int64_t from_us, int64_t to_us) {
  timeline_->add(stage, trace_row(key), from_us, to_us, trace_args(key, round, sender, bytes));
}

void SumServer::attach(const KVMessage& req, int rank) {
  if (!ipc_)
    return refuse(req, CARAVAN_ERR_SERVER,
                  "BYTEPS_ENABLE_IPC is not set on this server (set it on every node)");
  ipc::AttachRequest a;
  try {
    a = ipc::decode_attach(req.vals.data, req.vals.len);
    segments_.attach(rank, a);
  } catch (const std::exception& e) {
    return refuse(req, CARAVAN_ERR_SERVER, e.what());
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
    return refuse(req, CARAVAN_ERR_SERVER,
                  "node " + std::to_string(h.sender) + " is not a worker of this job");
  if ((h.flags & wire::kShm) && !(h.flags & (wire::kPush | wire::kPull))) return attach(req, rank);
  Source source;
  if (h.flags & wire::kShm) {
    try {
      source.place = ipc::decode_descriptor(req.vals.data, req.vals.len);
      source.slot = segments_.resolve(rank, *source.place);
    } catch (const std::exception& e) {
      return refuse(req, CARAVAN_ERR_SERVER, e.what());
    }
    req.vals = source.slot;
  }
  PushPullRequest checked;
  std::string why;
  if (!parse_push_pull_request(req, num_workers_, &checked, &why))
    return refuse(req, CARAVAN_ERR_SERVER, why);
  metrics::registry().server_pushes.add();
  metrics::registry().server_push_bytes.add(req.vals.len);
  SumThread*& t = owner_[checked.key];
  if (!t) {
    t = sum_threads_.front().get();
    for (auto& c : sum_threads_)
      if (c->bytes < t->bytes) t = c.get();
    t->bytes += req.vals.len;
  }
  Queued q{std::move(req), checked, sequence_++, std::move(source),
           timeline_ ? Timeline::now_us() : 0};
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

void SumServer::run_one(SumThread& t, Queued&& q) {
  try {
    process(t, std::move(q));
  } catch (const std::exception& ex) {
    CARAVAN_LOG(ERROR) << "server: summing a request failed: " << ex.what();
  }
}

SumServer::Queued SumServer::take(SumThread& t) {
  size_t best = 0;
  if (schedule_) {
    // The key with the fewest finished rounds is the one whose workers wait
    // longest; among equals, arrival order.
    uint64_t best_rounds = UINT64_MAX;
    for (size_t i = 0; i < t.queue.size(); ++i) {
      uint64_t key = t.queue[i].checked.key;
      auto it = t.keys.find(key);
      uint64_t rounds = it == t.keys.end() ? 0 : it->second.rounds;
      if (rounds < best_rounds) {
        best_rounds = rounds;
        best = i;
      }
    }
  }
  Queued q = std::move(t.queue[best]);
  t.queue.erase(t.queue.begin() + static_cast<std::ptrdiff_t>(best));
  return q;
}

void SumServer::run(SumThread& t) {
  std::unique_lock<std::mutex> lock(t.mu);
  for (;;) {
    t.cv.wait(lock, [&] { return t.stop || (!t.queue.empty() && !t.busy); });
    if (t.stop) return;
    Queued q = take(t);
    t.busy = true;
    lock.unlock();
    run_one(t, std::move(q));
    lock.lock();
    t.busy = false;
  }
}

void SumServer::process(SumThread& t, Queued&& q) {
  const KVMessage& req = q.request;
  const wire::Header& h = req.head;
  int rank = q.checked.rank;
  size_t esize = q.checked.element_bytes;
  uint64_t key = q.checked.key;
  CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
      << "sample key " << key << " receive from worker " << rank << ": "
      << sample_values(req.vals.data, req.vals.len, h.dtype);
  KeyState& k = t.keys[key];
  Use use = q.checked.root >= 0 ? Use::kBroadcast : Use::kSum;
  if (k.use == Use::kUnknown) {
    k.use = use;
    k.round.pushed.assign(static_cast<size_t>(num_workers_), false);
  } else if (k.poisoned.empty() && k.use != use) {
    poison(k, "key " + std::to_string(key) + " was " +
                  (k.use == Use::kSum ? "push_pulled" : "broadcast") + ", but worker " +
                  std::to_string(rank) + " " + (use == Use::kSum ? "push_pulls" : "broadcasts") +
                  " it (one tensor name used for both on different workers)");
  }
  if (use == Use::kBroadcast) {
    if (!k.poisoned.empty()) return refuse(req, CARAVAN_ERR_MISMATCH, k.poisoned);
    return relay(k, key, std::move(q), rank);
  }
  const size_t bytes = q.checked.count * esize;
  const std::string& compression = q.checked.compression;
  if (k.dtype < 0) {
    k.bytes = bytes;
    k.dtype = h.dtype;
    k.compression = compression;
    if (q.checked.compressed && !async_ && !make_codec(k, key, q))
      return refuse(req, CARAVAN_ERR_MISMATCH, k.poisoned);
  } else if (k.poisoned.empty() && (k.bytes != bytes || k.dtype != h.dtype)) {
    poison(k, "key " + std::to_string(key) + " holds " +
                  std::to_string(k.bytes / dtype_size(k.dtype)) + " " + dtype_name(k.dtype) +
                  " elements, but worker " + std::to_string(rank) + " pushed " +
                  std::to_string(q.checked.count) + " " + dtype_name(h.dtype) +
                  " (the same tensor name with different sizes or dtypes on two workers)");
  } else if (k.poisoned.empty() && k.compression != compression) {
    auto said = [](const std::string& c) { return c.empty() ? std::string("none") : c; };
    poison(k, "key " + std::to_string(key) + " was pushed with compression parameters '" +
                  said(k.compression) + "', but worker " + std::to_string(rank) + " pushes it with '" +
                  said(compression) +
                  "' (declare the tensor with the same parameters on every worker)");
  }
  if (!k.poisoned.empty()) return refuse(req, CARAVAN_ERR_MISMATCH, k.poisoned);
  if (q.checked.compressed && async_)
    return refuse(req, CARAVAN_ERR_SERVER,
                  "compressed pushes need synchronous rounds (the server compresses each round's "
                  "sum), and BYTEPS_ENABLE_ASYNC=1 is set on this server");
  if (q.checked.compressed) return sum_compressed(k, key, std::move(q), rank);
  if (async_)
    sum_async(k, key, std::move(q), esize);
  else
    sum_sync(k, key, std::move(q), rank, esize);
}

void SumServer::poison(KeyState& k, const std::string& why) {
  k.poisoned = why;
  // The workers already waiting in this round get the error too, rather
  // than waiting for a result that cannot be right.
  for (const Waiter& w : k.round.waiting) answer_error(w.head, CARAVAN_ERR_MISMATCH, why);
  k.round = Round{};
}

void SumServer::relay(KeyState& k, uint64_t key, Queued&& q, int rank) {
  const KVMessage& req = q.request;
  const wire::Header& h = req.head;
  const int root = q.checked.root;
  Round& r = k.round;
  std::string wrong;
  if (k.dtype >= 0 && h.dtype != k.dtype)
    wrong = "worker " + std::to_string(rank) + " broadcasts key " + std::to_string(key) + " as " +
            dtype_name(h.dtype) + ", earlier requests as " + dtype_name(k.dtype);
  else if (rank == root && k.bytes != 0 && req.vals.len != k.bytes)
    wrong = "the root of key " + std::to_string(key) + ", worker " + std::to_string(rank) +
            ", broadcasts " + std::to_string(req.vals.len) + " bytes, earlier " +
            std::to_string(k.bytes);
  else if (r.root >= 0 && r.root != root)
    wrong = "workers broadcast key " + std::to_string(key) + " from different roots: worker " +
            std::to_string(rank) + " from worker " + std::to_string(root) + ", others from worker " +
            std::to_string(r.root);
  if (!wrong.empty()) {
    poison(k, wrong);
    return refuse(req, CARAVAN_ERR_MISMATCH, wrong);
  }
  if (r.pushed[static_cast<size_t>(rank)])
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + " broadcast key " + std::to_string(key) +
                      " twice in one round");
  r.pushed[static_cast<size_t>(rank)] = true;
  r.root = root;
  k.dtype = h.dtype;
  if (rank == root) {
    k.bytes = req.vals.len;
    r.sum = req.vals;  // kept, not copied, until the last answer is sent
  }
  r.waiting.push_back(Waiter{h, {}});
  if (static_cast<int>(r.waiting.size()) < num_workers_) return;

  Round done = std::move(r);
  r = Round{};
  r.pushed.assign(static_cast<size_t>(num_workers_), false);
  ++k.rounds;
  for (const Waiter& w : done.waiting)
    answer(w.head, key, w.head.sender == worker_id(root) ? Blob{} : done.sum);
}

void SumServer::sum_sync(KeyState& k, uint64_t key, Queued&& q, int rank, size_t esize) {
  const KVMessage& req = q.request;
  const wire::Header& h = req.head;
  Round& r = k.round;
  if (r.pushed[static_cast<size_t>(rank)])
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + " pushed key " + std::to_string(key) +
                      " twice in one round");
  r.pushed[static_cast<size_t>(rank)] = true;
  int64_t sum_from = 0;
  if (timeline_) {
    if (r.waiting.empty()) {
      // A round begins: the step of this key (per tensor, as BytePS counts).
      timeline_->saw_step(static_cast<int>(std::min<uint64_t>(k.rounds, INT32_MAX)));
      r.traced = timeline_->traced(static_cast<int>(std::min<uint64_t>(k.rounds, INT32_MAX)));
      if (r.traced) timeline_->begin(static_cast<int>(k.rounds));
    }
    if (r.traced) sum_from = Timeline::now_us();
  }
  if (r.waiting.empty()) {
    // The first push becomes the accumulator: no copy, and a fresh buffer
    // for every round.
    r.sum = req.vals;
  } else {
    reducer_.sum(r.sum.data, req.vals.data, req.vals.len / esize,
                 static_cast<caravan_dtype>(h.dtype));
  }
  if (r.traced) {
    // receive: queued for this summation thread; sum: adding it in.
    trace("receive", key, k.rounds, h, req.vals.len, q.arrived_us, sum_from);
    trace("sum", key, k.rounds, h, req.vals.len, sum_from, Timeline::now_us());
  }
  r.waiting.push_back(Waiter{h, std::move(q.source)});
  if (static_cast<int>(r.waiting.size()) < num_workers_) return;

  Round done = std::move(r);
  r = Round{};
  r.pushed.assign(static_cast<size_t>(num_workers_), false);
  TracedRound traced = kUntraced;
  if (done.traced) traced = TracedRound{static_cast<int64_t>(k.rounds), Timeline::now_us()};
  ++k.rounds;
  CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
      << "sample key " << key << " sum of round " << k.rounds << ": "
      << sample_values(done.sum.data, done.sum.len, h.dtype);
  finish_round(done, key, traced);
  if (done.traced) timeline_->end();
}

void SumServer::finish_round(Round& done, uint64_t key, TracedRound traced) {
  metrics::registry().server_rounds.add();
  metrics::registry().server_answer_bytes.add(done.sum.len * done.waiting.size());
  // Every copy is made before the first answer goes out: once answered, a
  // worker may start its next round, overwriting its slot, which may be
  // the accumulator.
  bool sum_in_a_slot = false, van_waiters = false;
  for (const Waiter& w : done.waiting) {
    if (!w.source.place)
      van_waiters = true;
    else if (w.source.slot.data == done.sum.data)
      sum_in_a_slot = true;
  }
  Blob for_van = done.sum;
  if (sum_in_a_slot && van_waiters) {
    auto copy = std::shared_ptr<char[]>(new char[done.sum.len]);
    std::memcpy(copy.get(), done.sum.data, done.sum.len);
    for_van = Blob{copy.get(), done.sum.len, copy};
  }
  for (const Waiter& w : done.waiting)
    if (w.source.place && w.source.slot.data != done.sum.data)
      std::memcpy(w.source.slot.data, done.sum.data, done.sum.len);
  for (const Waiter& w : done.waiting) {
    if (w.source.place)
      answer_in_place(w.head, key, *w.source.place, traced);
    else
      answer(w.head, key, for_van, traced);
  }
}

bool SumServer::make_codec(KeyState& k, uint64_t key, const Queued& q) {
  try {
    CompressionSpec spec = CompressionSpec::from_text(q.checked.compression);
    if (!spec.compressed()) throw std::invalid_argument("no byteps_compressor_type");
    k.seed = spec.seed;
    k.codec = std::make_unique<SumCodec>(spec, static_cast<caravan_dtype>(q.request.head.dtype),
                                         q.checked.count, plugin_path_,
                                         "key " + std::to_string(key));
  } catch (const std::exception& e) {
    poison(k, std::string("cannot sum compressed key ") + std::to_string(key) + " here: " +
                  e.what());
    return false;
  }
  return true;
}

void SumServer::sum_compressed(KeyState& k, uint64_t key, Queued&& q, int rank) {
  const KVMessage& req = q.request;
  Round& r = k.round;
  if (r.pushed[static_cast<size_t>(rank)])
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + " pushed key " + std::to_string(key) +
                      " twice in one round");
  // Seeds are made from the round: a worker at another round than this
  // key's would be decoded with the wrong draws (random-k's indices).
  if (static_cast<uint64_t>(req.head.cmd) != (k.rounds & 0x7fffffff))
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + " pushed compressed key " +
                      std::to_string(key) + " for its round " + std::to_string(req.head.cmd) +
                      ", but the key is at round " + std::to_string(k.rounds & 0x7fffffff) +
                      " here (a push_pull of the tensor failed or was abandoned on one side)");
  const uint64_t seed = round_seed(k.seed, key, k.rounds);
  try {
    k.codec->add(req.vals.data, req.vals.len, r.waiting.empty(), seed);
  } catch (const std::exception& e) {
    // The sum is as it was: this push never counted.
    return refuse(req, CARAVAN_ERR_SERVER,
                  "worker " + std::to_string(rank) + "'s push: " + e.what());
  }
  r.pushed[static_cast<size_t>(rank)] = true;
  r.waiting.push_back(Waiter{req.head, {}});
  if (static_cast<int>(r.waiting.size()) < num_workers_) return;

  Round done = std::move(r);
  r = Round{};
  r.pushed.assign(static_cast<size_t>(num_workers_), false);
  ++k.rounds;
  // Each round's answer has a buffer of its own: the van may still send
  // it when the next round's sum is compressed.
  auto out = std::shared_ptr<char[]>(new char[k.codec->max_bytes()]);
  size_t len = 0;
  try {
    len = k.codec->compress_sum(out.get(), seed);
  } catch (const std::exception& e) {
    for (const Waiter& w : done.waiting) answer_error(w.head, CARAVAN_ERR_SERVER, e.what());
    return;
  }
  metrics::registry().server_rounds.add();
  metrics::registry().server_answer_bytes.add(len * done.waiting.size());
  for (const Waiter& w : done.waiting)
    answer(w.head, key, Blob{out.get(), len, out}, kUntraced, wire::kCompressed);
}

void SumServer::sum_async(KeyState& k, uint64_t key, Queued&& q, size_t esize) {
  const KVMessage& req = q.request;
  const wire::Header& h = req.head;
  if (!k.store.data) {
    // The store starts at zero, so after any set of pushes it holds
    // exactly their sum.
    auto zero = std::shared_ptr<char[]>(new char[k.bytes]());
    k.store = Blob{zero.get(), k.bytes, zero};
  }
  reducer_.sum(k.store.data, req.vals.data, req.vals.len / esize,
               static_cast<caravan_dtype>(h.dtype));
  ++k.rounds;
  if (q.source.place) {
    std::memcpy(q.source.slot.data, k.store.data, k.bytes);
    CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
        << "sample key " << key << " store after push " << k.rounds << ": "
        << sample_values(q.source.slot.data, k.bytes, h.dtype);
    return answer_in_place(h, key, *q.source.place);
  }
  // The store keeps changing while the van sends: each answer is a copy.
  auto copy = std::shared_ptr<char[]>(new char[k.bytes]);
  std::memcpy(copy.get(), k.store.data, k.bytes);
  CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
      << "sample key " << key << " store after push " << k.rounds << ": "
      << sample_values(copy.get(), k.bytes, h.dtype);
  answer(h, key, Blob{copy.get(), k.bytes, copy});
}

}  // namespace caravan
