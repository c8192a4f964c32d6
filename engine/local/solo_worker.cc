#include "engine/local/solo_worker.h"

namespace caravan {
namespace {

struct SoloOp final : Worker::Op {
  explicit SoloOp(LocalTensor* t) : tensor(t) {}
  LocalTensor* tensor;
  bool seen = false;  // guarded by the registry's mutex
};

}  // namespace

std::shared_ptr<Worker::Op> SoloWorker::submit(const std::string& name, void* data, size_t count,
                                               int dtype, int priority, int root) {
  std::lock_guard<std::mutex> lock(tensors_.mutex());
  // A broadcast from the only worker leaves its data as it is, as the sum
  // over one worker does.
  return std::make_shared<SoloOp>(&tensors_.start(name, count, dtype, root != kSum));
}

int SoloWorker::poll(Op& op, std::string* error) {
  std::lock_guard<std::mutex> lock(tensors_.mutex());
  auto& solo = static_cast<SoloOp&>(op);
  // Seen once: a later push_pull of the same tensor is another op.
  if (!solo.seen) tensors_.finish(*solo.tensor);
  solo.seen = true;
  return 1;
}

int SoloWorker::wait(Op& op, std::string* error) {
  poll(op, error);
  return 0;
}

}  // namespace caravan
