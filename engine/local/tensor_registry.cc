#include "engine/local/tensor_registry.h"

#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/local/tensor_segment.h"

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
  const char* kind = t.broadcast ? "broadcast" : "push_pull";
  if (t.broadcast != broadcast)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was first used for " + kind +
                                          ", now for " +
                                          (broadcast ? "broadcast" : "push_pull") +
                                          "; give the two operations different names");
  // The same words as the distributed path's, so a program sees the same
  // errors whichever way its job runs.
  if (t.count != count || t.dtype != dtype)
    throw Error(CARAVAN_ERR_MISMATCH, "tensor '" + name + "' was first used with " +
                                          std::to_string(t.count) + " " + dtype_name(t.dtype) +
                                          " elements, now with " + std::to_string(count) + " " +
                                          dtype_name(dtype));
  if (t.in_flight)
    throw Error(CARAVAN_ERR_BUSY,
                "tensor '" + name + "' already has a " + kind + " in flight; wait for it first");
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
