#include "engine/server/key_kinds.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "caravan/caravan.h"
#include "engine/base/dtype.h"
#include "engine/base/metrics.h"
#include "engine/compress/codec.h"
#include "engine/compress/compression_spec.h"
#include "engine/control/node_info.h"
#include "engine/kv/sample_log.h"

namespace caravan {

void poison(KeyState& k, Answers& answers, const std::string& why) {
  k.poisoned = why;
  // The workers already waiting in this round get the error too, rather
  // than waiting for a result that cannot be right.
  for (const Waiter& w : k.round.clear()) answers.error(w.head, CARAVAN_ERR_MISMATCH, why);
}

namespace {

int step_of(uint64_t round) { return static_cast<int>(std::min<uint64_t>(round, INT32_MAX)); }

class SumKind final : public KeyKind {
 public:
  explicit SumKind(const KeyContext& ctx) : ctx_(ctx) {}

  void push(KeyState& k, uint64_t key, Push&& q) override {
    const KVMessage& req = q.request;
    const wire::Header& h = req.head;
    Round& r = k.round;
    std::string twice = r.twice(q.checked.rank, key, "pushed");
    if (!twice.empty()) return ctx_.answers.refuse(req, CARAVAN_ERR_SERVER, twice);
    Timeline* timeline = ctx_.answers.timeline();
    int64_t sum_from = 0;
    if (timeline) {
      if (r.empty()) {
        // A round begins: the step of this key (per tensor, as BytePS counts).
        timeline->saw_step(step_of(r.number()));
        r.traced = timeline->traced(step_of(r.number()));
        if (r.traced) timeline->begin(step_of(r.number()));
      }
      if (r.traced) sum_from = Timeline::now_us();
    }
    if (r.empty()) {
      // The first push becomes the accumulator: no copy, and a fresh
      // buffer for every round.
      r.values = req.vals;
    } else {
      ctx_.reducer.sum(r.values.data, req.vals.data, req.vals.len / q.checked.element_bytes,
                       static_cast<caravan_dtype>(h.dtype));
    }
    if (r.traced) {
      // receive: queued for this summation thread; sum: adding it in.
      ctx_.answers.trace("receive", key, r.number(), h, req.vals.len, q.arrived_us, sum_from);
      ctx_.answers.trace("sum", key, r.number(), h, req.vals.len, sum_from, Timeline::now_us());
    }
    r.join(q.checked.rank, Waiter{h, std::move(q.source)});
    if (!r.complete()) return;

    Answers::Traced traced;
    if (r.traced) traced = Answers::Traced{static_cast<int64_t>(r.number()), Timeline::now_us()};
    Round done = r.roll_over();
    CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
        << "sample key " << key << " sum of round " << r.number() << ": "
        << sample_values(done.values.data, done.values.len, h.dtype);
    answer(done, key, traced);
    if (done.traced) timeline->end();
  }

 private:
  void answer(const Round& done, uint64_t key, Answers::Traced traced) {
    const Blob& sum = done.values;
    size_t pulls = 0;
    for (const Waiter& w : done.waiting()) pulls += (w.head.flags & wire::kPull) ? 1 : 0;
    metrics::registry().server_rounds.add();
    metrics::registry().server_answer_bytes.add(sum.len * pulls);
    // Every copy is made before the first answer goes out: once answered, a
    // worker may start its next round, overwriting its slot, which may be
    // the accumulator.
    bool sum_in_a_slot = false, van_waiters = false;
    for (const Waiter& w : done.waiting()) {
      if (!w.source.place)
        van_waiters = true;
      else if (w.source.slot.data == sum.data)
        sum_in_a_slot = true;
    }
    Blob for_van = sum;
    if (sum_in_a_slot && van_waiters) {
      auto copy = std::shared_ptr<char[]>(new char[sum.len]);
      std::memcpy(copy.get(), sum.data, sum.len);
      for_van = Blob{copy.get(), sum.len, copy};
    }
    for (const Waiter& w : done.waiting())
      if (w.source.place && w.source.slot.data != sum.data)
        std::memcpy(w.source.slot.data, sum.data, sum.len);
    for (const Waiter& w : done.waiting()) {
      if (w.source.place)
        ctx_.answers.in_place(w.head, key, *w.source.place, traced);
      else if (!(w.head.flags & wire::kPull))
        ctx_.answers.values(w.head, key, Blob{}, traced);  // pushed only: the round is over
      else
        ctx_.answers.values(w.head, key, for_van, traced);
    }
  }

  KeyContext ctx_;
};

class RelayKind final : public KeyKind {
 public:
  explicit RelayKind(const KeyContext& ctx) : ctx_(ctx) {}

  void push(KeyState& k, uint64_t key, Push&& q) override {
    const KVMessage& req = q.request;
    const wire::Header& h = req.head;
    const int rank = q.checked.rank;
    const int root = q.checked.root;
    Round& r = k.round;
    if (k.dtype < 0) direct_ = q.checked.direct;  // the key's first push
    std::string wrong;
    if (q.checked.direct != direct_)
      wrong = "worker " + std::to_string(rank) + " asks for key " + std::to_string(key) + " as " +
              relay_name(q.checked.direct) + ", earlier requests as " + relay_name(direct_);
    else if (direct_ && rank != root && !r.empty() && receiver_of(r, root) >= 0)
      wrong = "key " + std::to_string(key) + " goes from worker " + std::to_string(root) +
              " to one worker, but workers " + std::to_string(receiver_of(r, root)) + " and " +
              std::to_string(rank) + " both ask for it";
    else if (k.dtype >= 0 && h.dtype != k.dtype)
      wrong = "worker " + std::to_string(rank) + " broadcasts key " + std::to_string(key) + " as " +
              dtype_name(h.dtype) + ", earlier requests as " + dtype_name(k.dtype);
    else if (rank == root && k.bytes != 0 && req.vals.len != k.bytes)
      wrong = "the root of key " + std::to_string(key) + ", worker " + std::to_string(rank) +
              ", broadcasts " + std::to_string(req.vals.len) + " bytes, earlier " +
              std::to_string(k.bytes);
    else if (r.root >= 0 && r.root != root)
      wrong = "workers broadcast key " + std::to_string(key) + " from different roots: worker " +
              std::to_string(rank) + " from worker " + std::to_string(root) +
              ", others from worker " + std::to_string(r.root);
    if (!wrong.empty()) {
      poison(k, ctx_.answers, wrong);
      return ctx_.answers.refuse(req, CARAVAN_ERR_MISMATCH, wrong);
    }
    std::string twice = r.twice(rank, key, "broadcast");
    if (!twice.empty()) return ctx_.answers.refuse(req, CARAVAN_ERR_SERVER, twice);
    r.root = root;
    k.dtype = h.dtype;
    if (rank == root) {
      k.bytes = req.vals.len;
      r.values = req.vals;  // kept, not copied, until the last answer is sent
    }
    r.join(rank, Waiter{h, {}});
    if (direct_ ? r.waiting().size() < 2 : !r.complete()) return;

    Round done = r.roll_over();
    for (const Waiter& w : done.waiting())
      ctx_.answers.values(w.head, key, w.head.sender == worker_id(root) ? Blob{} : done.values);
  }

 private:
  static const char* relay_name(bool direct) {
    return direct ? "a relay to one worker (all-to-all)" : "a broadcast";
  }
  // The rank of the worker other than `root` waiting in `r`, or -1.
  static int receiver_of(const Round& r, int root) {
    for (const Waiter& w : r.waiting())
      if (w.head.sender != worker_id(root)) return (w.head.sender - worker_id(0)) / 2;
    return -1;
  }

  KeyContext ctx_;
  bool direct_ = false;  // fixed by the key's first push
};

class CompressedKind final : public KeyKind {
 public:
  CompressedKind(const KeyContext& ctx, const Push& first) : ctx_(ctx) {
    CompressionSpec spec = CompressionSpec::from_text(first.checked.compression);
    if (!spec.compressed()) throw std::invalid_argument("no byteps_compressor_type");
    seed_ = spec.seed;
    codec_ = std::make_unique<SumCodec>(spec, static_cast<caravan_dtype>(first.request.head.dtype),
                                        first.checked.count, ctx.plugin_path,
                                        "key " + std::to_string(first.checked.key));
  }

  void push(KeyState& k, uint64_t key, Push&& q) override {
    const KVMessage& req = q.request;
    const int rank = q.checked.rank;
    Round& r = k.round;
    std::string twice = r.twice(rank, key, "pushed");
    if (!twice.empty()) return ctx_.answers.refuse(req, CARAVAN_ERR_SERVER, twice);
    // Seeds are made from the round: a worker at another round than this
    // key's would be decoded with the wrong draws (random-k's indices).
    const uint64_t round = r.number();
    if (static_cast<uint64_t>(req.head.cmd) != (round & 0x7fffffff))
      return ctx_.answers.refuse(
          req, CARAVAN_ERR_SERVER,
          "worker " + std::to_string(rank) + " pushed compressed key " + std::to_string(key) +
              " for its round " + std::to_string(req.head.cmd) + ", but the key is at round " +
              std::to_string(round & 0x7fffffff) +
              " here (a push_pull of the tensor failed or was abandoned on one side)");
    const uint64_t seed = round_seed(seed_, key, round);
    try {
      codec_->add(req.vals.data, req.vals.len, r.empty(), seed);
    } catch (const std::exception& e) {
      // The sum is as it was: this push never counted.
      return ctx_.answers.refuse(req, CARAVAN_ERR_SERVER,
                                 "worker " + std::to_string(rank) + "'s push: " + e.what());
    }
    r.join(rank, Waiter{req.head, {}});
    if (!r.complete()) return;

    Round done = r.roll_over();
    // Each round's answer has a buffer of its own: the van may still send
    // it when the next round's sum is compressed.
    auto out = std::shared_ptr<char[]>(new char[codec_->max_bytes()]);
    size_t len = 0;
    try {
      len = codec_->compress_sum(out.get(), seed);
    } catch (const std::exception& e) {
      for (const Waiter& w : done.waiting())
        ctx_.answers.error(w.head, CARAVAN_ERR_SERVER, e.what());
      return;
    }
    metrics::registry().server_rounds.add();
    metrics::registry().server_answer_bytes.add(len * done.waiting().size());
    for (const Waiter& w : done.waiting())
      ctx_.answers.values(w.head, key, Blob{out.get(), len, out}, {}, wire::kCompressed);
  }

 private:
  KeyContext ctx_;
  uint64_t seed_ = 0;
  std::unique_ptr<SumCodec> codec_;
};

class AsyncKind final : public KeyKind {
 public:
  explicit AsyncKind(const KeyContext& ctx) : ctx_(ctx) {}

  void push(KeyState& k, uint64_t key, Push&& q) override {
    const KVMessage& req = q.request;
    const wire::Header& h = req.head;
    if (q.checked.compressed)
      return ctx_.answers.refuse(
          req, CARAVAN_ERR_SERVER,
          "compressed pushes need synchronous rounds (the server compresses each round's "
          "sum), and BYTEPS_ENABLE_ASYNC=1 is set on this server");
    if (!store_.data) {
      // The store starts at zero, so after any set of pushes it holds
      // exactly their sum.
      auto zero = std::shared_ptr<char[]>(new char[k.bytes]());
      store_ = Blob{zero.get(), k.bytes, zero};
    }
    ctx_.reducer.sum(store_.data, req.vals.data, req.vals.len / q.checked.element_bytes,
                     static_cast<caravan_dtype>(h.dtype));
    k.round.roll_over();  // every push is a round of its own: the count of pushes added
    if (!(h.flags & wire::kPull)) return ctx_.answers.values(h, key, Blob{});  // pushed only
    if (q.source.place) {
      std::memcpy(q.source.slot.data, store_.data, k.bytes);
      CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
          << "sample key " << key << " store after push " << k.round.number() << ": "
          << sample_values(q.source.slot.data, k.bytes, h.dtype);
      return ctx_.answers.in_place(h, key, *q.source.place);
    }
    // The store keeps changing while the van sends: each answer is a copy.
    auto copy = std::shared_ptr<char[]>(new char[k.bytes]);
    std::memcpy(copy.get(), store_.data, k.bytes);
    CARAVAN_SAMPLE_LOG(h.flags & wire::kSample)
        << "sample key " << key << " store after push " << k.round.number() << ": "
        << sample_values(copy.get(), k.bytes, h.dtype);
    ctx_.answers.values(h, key, Blob{copy.get(), k.bytes, copy});
  }

 private:
  KeyContext ctx_;
  Blob store_;  // the running sum
};

}  // namespace

std::unique_ptr<KeyKind> make_sum_kind(const KeyContext& ctx) {
  return std::make_unique<SumKind>(ctx);
}
std::unique_ptr<KeyKind> make_relay_kind(const KeyContext& ctx) {
  return std::make_unique<RelayKind>(ctx);
}
std::unique_ptr<KeyKind> make_async_kind(const KeyContext& ctx) {
  return std::make_unique<AsyncKind>(ctx);
}
std::unique_ptr<KeyKind> make_compressed_kind(const KeyContext& ctx, const Push& first) {
  return std::make_unique<CompressedKind>(ctx, first);
}

}  // namespace caravan
