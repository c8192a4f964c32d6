#include "engine/local/tensor_registry.h"

#include "engine/base/error.h"
#include "engine/local/tensor_segment.h"
#include "engine/worker/tensor_plan.h"

namespace caravan {

LocalTensor::LocalTensor(std::string n, size_t c, int d, bool b)
    : name(std::move(n)), count(c), dtype(d), broadcast(b) {}
LocalTensor::~LocalTensor() = default;

LocalTensor& TensorRegistry::start(const std::string& name, size_t count, int dtype,
                                   bool broadcast) {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    it = tensors_.emplace(name, std::make_unique<LocalTensor>(name, count, dtype, broadcast)).first;
  LocalTensor& t = *it->second;
  // The same words as the distributed path's, so a program sees the same
  // errors whichever way its job runs.
  auto kind = [](bool b) { return b ? OpKind::kBroadcast : OpKind::kPushPull; };
  check_reuse(name, {kind(t.broadcast), t.count, t.dtype}, t.in_flight,
              {kind(broadcast), count, dtype});
  if (t.failure_code != 0) throw Error(t.failure_code, t.failure);
  t.in_flight = true;
  ++t.rounds;
  ++in_flight_;
  return t;
}

void TensorRegistry::finish(LocalTensor& t, int code, const std::string& error) {
  if (!t.in_flight) return;
  t.in_flight = false;
  --in_flight_;
  if (code != 0 && t.failure_code == 0) {
    t.failure_code = code;
    t.failure = error;
  }
}

}  // namespace caravan
