// The whole job is this one process (DMLC_NUM_WORKER=1, BYTEPS_LOCAL_SIZE=1):
// the sum over one worker is its own data, so push_pull needs no
// scheduler, no server and not even a copy.
#pragma once

#include "engine/local/tensor_registry.h"
#include "engine/worker/worker.h"

namespace caravan {

class SoloWorker final : public Worker {
 public:
  std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                             int priority, int root) override;
  // A push_pull stays in flight until poll() or wait() sees it, so that
  // reusing a tensor too early is the same BUSY error as in a real job.
  int poll(Op& op, std::string* error) override;
  int wait(Op& op, std::string* error) override;
  void leave() override {}
  bool suspend() override { return false; }
  bool moves_values() const override { return false; }
  int rank() const override { return 0; }
  int size() const override { return 1; }

 private:
  TensorRegistry tensors_;
};

}  // namespace caravan
