// Local rank 0's side of a machine's push_pull: the machine-sum thread
// takes each operation from gathering the local ranks' slots, through the
// servers (when the job has them), to publishing the result they copy out.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/thread_name.h"
#include "engine/local/local_op.h"
#include "engine/local/local_worker.h"
#include "engine/local/tensor_segment.h"

namespace caravan {

void LocalWorker::run_machine_sum() {
  name_this_thread("cv-machine-sum");
  Doorbell bell = group_->doorbell();
  for (;;) {
    uint32_t ticket = bell.ticket();
    std::vector<std::shared_ptr<LocalOp>> ops;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      ops = pending_;
    }
    auto wake = SteadyClock::time_point::max();
    for (auto& op : ops) {
      if (advance(op)) continue;
      // An op waiting for the device has no doorbell to wake it: look again soon.
      wake = std::min(
          wake, op->poll_soon ? SteadyClock::now() + std::chrono::microseconds(20) : op->deadline);
    }
    bell.sleep_until(ticket, wake);
  }
}

void LocalWorker::stop_machine_sum() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  group_->doorbell().ring();
  thread_.join();
}

// One step of `op`; true once it is done.
bool LocalWorker::advance(const std::shared_ptr<LocalOp>& op) {
  TensorSegment& seg = *op->tensor->segment;
  int code = 0;
  std::string why;
  try {
    group_->check();
  } catch (const Error& e) {
    complete(*op, e.code(), e.what());
    return true;
  }
  if (seg.refused(&code, &why)) {
    complete(*op, code, why);
    return true;
  }
  if (!op->summed) {
    std::vector<int> missing;
    std::string gone = deserted(*op, &missing);
    if (!gone.empty() || (!missing.empty() && SteadyClock::now() >= op->deadline)) {
      std::string msg = gone.empty() ? overdue(*op, missing) : gone;
      int rc = gone.empty() ? CARAVAN_ERR_TIMEOUT : CARAVAN_ERR_PEER_LOST;
      seg.refuse(rc, msg);
      complete(*op, rc, msg);
      return true;
    }
    if (!missing.empty()) return false;
    LocalTensor& t = *op->tensor;
    if (op->side) return advance_on_device(op);
    try {
      if (!gather(*op)) return true;
      op->summed = true;
      if (!member_) {
        publish(*op, 0, "");
        return true;
      }
      Doorbell bell = group_->doorbell();
      auto flag = op->remote_done;
      // Machines broadcast from the root's machine.
      int remote_root = op->root == kSum ? kSum : op->root / group_->local_size();
      op->remote = member_->client().submit(t.name, seg.slot(0), t.count, t.dtype, op->priority,
                                            remote_root, [flag, bell] {
                                              flag->store(true);
                                              bell.ring();
                                            });
    } catch (const Error& e) {
      std::string what = e.what();
      int rc = member_ ? member_->explain_failure(e.code(), &what) : e.code();
      publish(*op, rc, what);
      return true;
    }
  }
  if (op->side) return advance_on_device(op);
  if (op->remote_done->load()) {
    int rc = member_->explain_failure(member_->client().poll(*op->remote, &why), &why);
    publish(*op, rc < 0 ? rc : 0, rc < 0 ? why : "");
    return true;
  }
  if (SteadyClock::now() >= op->deadline) {
    std::string msg = "push_pull of " + round_of(*op->tensor, op->round) +
                      " through the servers did not finish" + within_op_timeout();
    seg.refuse(CARAVAN_ERR_TIMEOUT, msg);
    complete(*op, CARAVAN_ERR_TIMEOUT, msg);
    return true;
  }
  return false;
}

bool LocalWorker::gather(LocalOp& op) {
  TensorSegment& seg = *op.tensor->segment;
  LocalTensor& t = *op.tensor;
  // Device push_pulls summed on the device contribute kDeviceSum (local_device.cc).
  int mine = op.side ? kDeviceSum : op.root;
  for (int r = 1; r < group_->local_size(); ++r) {
    int theirs = seg.root_of(r);
    if (theirs == mine) continue;
    auto says = [](int root) {
      return root == kSum         ? std::string("push_pull of host memory")
             : root == kDeviceSum ? std::string("push_pull of device memory")
                                  : "broadcast from rank " + std::to_string(root);
    };
    std::string msg = "local ranks of machine " + group_->machine() + " disagree on " +
                      round_of(t, op.round) + ": " + group_->who(0) + " calls " + says(mine) +
                      ", " + group_->who(r) + " " + says(theirs);
    seg.refuse(CARAVAN_ERR_MISMATCH, msg);
    complete(op, CARAVAN_ERR_MISMATCH, msg);
    return false;
  }
  if (op.side) {
    gather_on_device(op);
    return true;
  }
  if (op.root == kSum) {
    std::vector<const void*> sources{op.data};
    for (int r = 1; r < group_->local_size(); ++r) sources.push_back(seg.slot(r));
    reducer_->sum_many(seg.slot(0), sources.data(), sources.size(), t.count,
                       static_cast<caravan_dtype>(t.dtype));
    return true;
  }
  // A broadcast: slot 0 gets the root's values if they are on this machine;
  // elsewhere the servers fill it.
  if (op.root / group_->local_size() != machine_rank_) return true;
  int from = op.root % group_->local_size();
  std::memcpy(seg.slot(0), from == 0 ? op.data : seg.slot(from), seg.bytes());
  return true;
}

// The round's result, for every local rank.
void LocalWorker::publish(LocalOp& op, int code, const std::string& error) {
  TensorSegment& seg = *op.tensor->segment;
  if (code == 0 && !op.side) std::memcpy(op.data, seg.slot(0), seg.bytes());
  seg.publish_result(op.round + 1, code, error);
  complete(op, code, error);
}

void LocalWorker::complete(LocalOp& op, int code, const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (op.done) return;  // a second waiter on the same handle
    {
      // Before `done` shows: whoever sees it may start the next round.
      std::lock_guard<std::mutex> registry(tensors_.mutex());
      tensors_.finish(*op.tensor, code, error);
    }
    op.done = true;
    op.code = code;
    op.error = error;
    if (code != 0 && first_failure_.empty()) first_failure_ = error;
    if (code == CARAVAN_ERR_REGROUPED) saw_regroup_ = true;
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const auto& p) { return p.get() == &op; }),
                   pending_.end());
  }
  done_cv_.notify_all();
}

}  // namespace caravan
