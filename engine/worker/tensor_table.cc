#include "engine/worker/tensor_table.h"

#include "caravan/caravan.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/worker/payload.h"

namespace caravan {

TensorPlan::TensorPlan() = default;
TensorPlan::~TensorPlan() = default;

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kPushPull:
      return "push_pull";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kAllgather:
      return "allgather";
    case OpKind::kAlltoall:
      return "alltoall";
  }
  return "?";
}

void check_reuse(const std::string& name, const TensorUse& was, bool in_flight,
                 const TensorUse& now) {
  const char* kind = kind_name(was.kind);
  if (was.kind != now.kind)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was first used for " + kind +
                                          ", now for " + kind_name(now.kind) +
                                          "; give the two operations different names");
  if (was.count != now.count || was.dtype != now.dtype)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was first used with " +
                                          std::to_string(was.count) + " " + dtype_name(was.dtype) +
                                          " elements, now with " + std::to_string(now.count) + " " +
                                          dtype_name(now.dtype));
  if (in_flight)
    throw Error(CARAVAN_ERR_BUSY,
                "tensor '" + name + "' already has a " + kind + " in flight; wait for it first");
}

TensorPlan& TensorTable::start(const std::string& name, size_t count, int dtype, OpKind kind,
                               uint64_t* round) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    auto spec = compression_.find(name);
    std::unique_ptr<TensorPlan> plan =
        plan_(name, count, dtype, kind, spec == compression_.end() ? nullptr : &spec->second);
    for (const Partition& p : plan->partitions) {
      auto [k, fresh] = keys_.emplace(p.key, name);
      if (!fresh) {
        for (const Partition& q : plan->partitions) {
          auto mine = keys_.find(q.key);
          if (mine != keys_.end() && mine->second == name) keys_.erase(mine);
        }
        throw Error(CARAVAN_ERR_MISMATCH, "tensor names '" + k->second + "' and '" + name +
                                              "' hash to the same key; rename one of them");
      }
    }
    it = tensors_.emplace(name, std::move(plan)).first;
  }
  TensorPlan& t = *it->second;
  check_reuse(name, {t.kind, t.count, t.dtype}, t.in_flight, {kind, count, dtype});
  t.in_flight = true;
  ++in_flight_;
  *round = t.rounds++;
  return t;
}

void TensorTable::finish(TensorPlan& plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan.in_flight = false;
    --in_flight_;
  }
  idle_.notify_all();
}

void TensorTable::drain(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!idle_.wait_for(lock, timeout, [&] { return in_flight_ == 0; }))
    throw Error(CARAVAN_ERR_TIMEOUT,
                std::to_string(in_flight_) + " push_pull operations still in flight after " +
                    std::to_string(timeout.count()) + " s (CARAVAN_OP_TIMEOUT)");
}

void TensorTable::declare_compression(const std::string& name, CompressionSpec spec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto known = compression_.find(name);
  if (known != compression_.end()) {
    if (known->second.text() == spec.text()) return;
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was declared with compression '" +
                                          known->second.text() + "', now with '" + spec.text() +
                                          "'");
  }
  if (tensors_.count(name))
    throw Error(CARAVAN_ERR_MISMATCH,
                "tensor '" + name +
                    "' was already used without compression parameters; declare them before "
                    "its first push_pull");
  compression_.emplace(name, std::move(spec));
}

}  // namespace caravan
