// A worker process of a machine with BYTEPS_LOCAL_SIZE > 1. Local rank 0
// sums the machine's contributions with the job's reducer, push_pulls that
// sum through the servers when there is a job (DMLC_NUM_WORKER > 1 or
// BYTEPS_FORCE_DISTRIBUTED=1), and hands the result back through shared
// memory; the other local ranks copy their data in and the result out.
// A broadcast goes the same way with the root's values in place of the
// sum: on the root's machine local rank 0 takes them from the root's slot
// and broadcasts them for the machine; elsewhere it receives them.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/base/config.h"
#include "engine/local/local_config.h"
#include "engine/local/local_group.h"
#include "engine/local/tensor_registry.h"
#include "engine/reducer/device_memory.h"
#include "engine/reducer/reducer.h"
#include "engine/worker/distributed_worker.h"
#include "engine/worker/worker.h"

namespace caravan {

class TensorSegment;

// collect() and finish_on_device(): not done yet.
constexpr int kPending = 1;
// What a local rank contributes as its "root" for a push_pull of device
// memory summed on the device (kSum: of host memory; >= 0: a broadcast's).
constexpr int kDeviceSum = -2;

class LocalWorker final : public Worker {
 public:
  // Meets the other local ranks (and, on local rank 0 with `joins_job`,
  // joins the job). Throws caravan::Error; the other local ranks then fail
  // with the reason too.
  LocalWorker(const JobConfig& config, const LocalConfig& local, bool joins_job);
  ~LocalWorker() override;

  std::shared_ptr<Op> submit(const std::string& name, void* data, size_t count, int dtype,
                             int priority, int root) override;
  // A push_pull of device memory with every local rank passing device
  // memory: summed on the device by local rank 0, which reads the others'
  // copies through IPC (local_device.cc). nullptr for a broadcast or a
  // device reducer without IPC.
  std::shared_ptr<Op> submit_on_device(const std::string& name, void* data, size_t count, int dtype,
                                       int priority, int root, void* stream,
                                       const std::shared_ptr<DeviceMemory>& device) override;
  int poll(Op& op, std::string* error) override;
  int wait(Op& op, std::string* error) override;
  // Local rank 0 sends the machine's sums: its declaration is the one
  // used (every local rank runs the same script); the others check theirs.
  void declare_compression(const std::string& name, const TensorParamList& params) override;
  void leave() override;
  bool suspend() override;
  // CARAVAN_ELASTIC: the job regrouped (an operation of this machine failed
  // with CARAVAN_ERR_REGROUPED); every local rank rejoins, and
  // leave_generation() passes the machine's barrier first, so that the
  // group ends cleanly and forms again for the next generation.
  bool regrouped() const override;
  JobConfig::Generation generation() const override;
  void leave_generation() override;
  int rank() const override { return machine_rank_ * group_->local_size() + group_->local_rank(); }
  int size() const override { return num_machines_ * group_->local_size(); }
  int local_rank() const override { return group_->local_rank(); }
  int local_size() const override { return group_->local_size(); }

 private:
  struct LocalOp;
  struct DeviceSide;
  // leave(), suspend() and leave_generation(): the machine's barrier, then
  // local rank 0 leaves (or suspends) the job of servers, or (a regroup)
  // drops its node without a barrier of the job.
  enum class Leaving { kJob, kSuspend, kGeneration };
  void leave_machine(Leaving how);
  std::shared_ptr<LocalOp> start_op(const std::string& name, size_t count, int dtype, int priority,
                                    int root);
  // Device ops (local_device.cc):
  DeviceSide& device_side(LocalTensor& t);
  void open_peer(DeviceSide& d, TensorSegment& seg, int r);
  // Local rank 0: enqueues the machine's sum on the device (throws on failure).
  void gather_on_device(LocalOp& op);
  // Local rank 0: the next step of a summed device op; true once done.
  bool advance_on_device(const std::shared_ptr<LocalOp>& op);
  // Every rank: the copy of the result into the caller's tensor has ended
  // (waiting for it with `block`); 0, kPending-like 1, or a negative error.
  int finish_on_device(LocalOp& op, bool block, std::string* error);
  void free_device_sides() noexcept;
  bool is_root() const { return group_->local_rank() == 0; }
  std::string overdue(const LocalOp& op, const std::vector<int>& missing) const;
  std::string within_op_timeout() const;
  std::string deserted(const LocalOp& op, std::vector<int>* missing) const;

  // Local rank 0: the machine-sum thread takes each op from gathering to
  // summed to (through the servers) published.
  void run_machine_sum();
  void stop_machine_sum();
  bool advance(const std::shared_ptr<LocalOp>& op);
  // Puts the machine's values for `op`'s remote step (or its result, when
  // there is none) in slot 0; false when the local ranks disagree.
  bool gather(LocalOp& op);
  void publish(LocalOp& op, int code, const std::string& error);
  void complete(LocalOp& op, int code, const std::string& error);

  // The other local ranks: wait for the result (or, without `block`, only
  // look) and copy it out. 0, a negative error, or kPending.
  int collect(LocalOp& op, bool block, std::string* error);
  void drain();

  JobConfig config_;
  bool joins_job_;
  int num_machines_;
  int machine_rank_ = 0;
  std::unique_ptr<LocalGroup> group_;
  std::unique_ptr<Reducer> reducer_;           // local rank 0
  std::unique_ptr<DistributedWorker> member_;  // local rank 0 of a job with servers
  TensorRegistry tensors_;

  // pending_, stop_ and every op's result; taken before the registry's mutex when both are.
  // Device tensors summed on the device: the device reducer's calls, this
  // process's stream for them, and each tensor's buffers and events.
  std::shared_ptr<DeviceMemory> device_;
  void* device_stream_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<DeviceSide>> device_sides_;  // under mu_

  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::vector<std::shared_ptr<LocalOp>> pending_;  // local rank 0: not yet done
  std::string first_failure_;  // the first op that failed: why this process may stop
  bool saw_regroup_ = false;   // an op ended with CARAVAN_ERR_REGROUPED
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace caravan
