#include "engine/local/local_worker.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/local/local_op.h"
#include "engine/local/tensor_segment.h"

namespace caravan {


namespace {



std::string job_key(const JobConfig& c) {
  // The scheduler's address names the job on every machine; without one,
  // the user's id keeps different users' jobs apart, and DMLC_PS_ROOT_PORT
  // when set two jobs of one user (as the README promises).
  if (!c.root_uri.empty() && c.root_port > 0) return c.root_uri + "-" + std::to_string(c.root_port);
  std::string key = "local-u" + std::to_string(getuid());
  if (c.root_port > 0) key += "-" + std::to_string(c.root_port);
  return key;
}

std::string machine_name(const JobConfig& c) {
  if (c.preferred_rank) return std::to_string(*c.preferred_rank);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

}  // namespace

std::string round_of(const LocalTensor& t, uint64_t round) {
  return "tensor '" + t.name + "' round " + std::to_string(round);
}

LocalWorker::LocalWorker(const JobConfig& config, const LocalConfig& local, bool joins_job)
    : config_(config), joins_job_(joins_job), num_machines_(config.num_workers) {
  LocalGroupOptions options;
  options.local_rank = local.local_rank;
  options.local_size = local.local_size;
  options.job_key = job_key(config);
  options.machine = machine_name(config);
  options.connect_timeout_s = config.connect_timeout_s;
  group_ = std::make_unique<LocalGroup>(options);
  if (is_root()) {
    try {
      reducer_ = open_reducer(config.reducer, config.plugin_path);
      remove_dead_runs_segments(*group_);
      if (joins_job) {
        LocalGroup* group = group_.get();
        member_ = std::make_unique<DistributedWorker>(config, [group](const std::string& why) {
          group->abort(CARAVAN_ERR_PEER_LOST, "the job failed (" + group->who(0) + "): " + why);
        });
        machine_rank_ = member_->rank();
        // Only this process talks to the scheduler: without this the job
        // heard that it, not the member that died, was lost.
        DistributedWorker* member = member_.get();
        group_->set_member_lost_handler([member](const std::string& why) { member->end_job(why); });
      }
      group_->publish_machine_rank(machine_rank_);
    } catch (const Error& e) {
      group_->set_member_lost_handler(nullptr);  // member_ goes before group_
      group_->abort(e.code(), group_->who(0) + " could not " +
                                  (joins_job ? "join the job: " : "start: ") + e.what());
      throw;
    }
    thread_ = std::thread([this] { run_machine_sum(); });
  } else {
    // Local rank 0 reports its own failure to join through the group; this
    // deadline only guards against it hanging.
    int limit = 2 * config.connect_timeout_s;
    machine_rank_ =
        group_->wait_machine_rank(SteadyClock::now() + std::chrono::seconds(limit),
                                  std::string(joins_job ? "join the job" : "start") + " within " +
                                      std::to_string(limit) + " s (2 x CARAVAN_CONNECT_TIMEOUT)");
  }
  Log::set_node_label("worker " + std::to_string(rank()) + " (" +
                      group_->who(group_->local_rank()) + ")");
  CARAVAN_LOG(INFO) << "local group of " << group_->local_size() << " on machine "
                    << group_->machine() << " formed"
                    << (is_root() ? ", summing with reducer " + reducer_->description() : "");
}

LocalWorker::~LocalWorker() {
  std::string failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = first_failure_;
  }
  // First, so the others hear of it before this process tears down.
  if (!group_->left()) group_->abandon(failed);
  // Then the job, before the link closes: the group's reason (a member's
  // death, this process's own failure) rather than a closed connection
  // that would name only this process. Waits for the scheduler's answer.
  if (member_ && !group_->left()) member_->end_job(group_->failure());
  stop_machine_sum();
  free_device_sides();
  // The job before the group: until the node's receiving thread stops, the
  // machine's operations through the servers can end, and ending rings the
  // group's doorbell in shared memory.
  group_->set_member_lost_handler(nullptr);
  member_.reset();
  group_.reset();
}

void LocalWorker::declare_compression(const std::string& name, const TensorParamList& params) {
  if (member_)
    member_->client().declare_compression(name, params);
  else
    Worker::declare_compression(name, params);
}

std::shared_ptr<Worker::Op> LocalWorker::submit(const std::string& name, void* data, size_t count,
                                                int dtype, int priority, int root) {
  std::shared_ptr<LocalOp> op = start_op(name, count, dtype, priority, root);
  op->data = static_cast<char*>(data);
  TensorSegment& seg = *op->tensor->segment;
  int me = group_->local_rank();
  // Local rank 0 sums straight from the caller's buffer; the others copy
  // theirs into their slot (for a broadcast, only its root).
  if (!is_root() && (root == kSum || root == rank())) std::memcpy(seg.slot(me), data, seg.bytes());
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(op);
  }
  seg.contribute(me, op->round + 1, root);  // rings the doorbell
  return op;
}

std::shared_ptr<LocalWorker::LocalOp> LocalWorker::start_op(const std::string& name, size_t count,
                                                            int dtype, int priority, int root) {
  group_->check();
  auto op = std::make_shared<LocalOp>();
  op->priority = priority;
  op->root = root;
  op->deadline = SteadyClock::now() + std::chrono::seconds(config_.op_timeout_s);
  {
    std::lock_guard<std::mutex> lock(tensors_.mutex());
    LocalTensor& t = tensors_.start(name, count, dtype, root != kSum);
    try {
      if (!t.segment) t.segment = std::make_unique<TensorSegment>(*group_, name, count, dtype);
      int code = 0;
      std::string why;
      if (t.segment->refused(&code, &why)) throw Error(code, why);
    } catch (const Error& e) {
      tensors_.finish(t, e.code(), e.what());
      throw;
    }
    op->tensor = &t;
    op->round = t.rounds - 1;
  }
  return op;
}

std::string LocalWorker::deserted(const LocalOp& op, std::vector<int>* missing) const {
  TensorSegment& seg = *op.tensor->segment;
  missing->clear();
  std::string why;
  for (int r = 0; r < group_->local_size(); ++r) {
    if (seg.contributed(r) > op.round) continue;
    missing->push_back(r);
    if (why.empty() && group_->is_leaving(r))
      why = group_->who(r) + " called caravan_shutdown() without push_pull of " +
            round_of(*op.tensor, op.round);
  }
  return why;
}

std::string LocalWorker::within_op_timeout() const {
  return " within " + std::to_string(config_.op_timeout_s) + " s (CARAVAN_OP_TIMEOUT)";
}

std::string LocalWorker::overdue(const LocalOp& op, const std::vector<int>& missing) const {
  if (!missing.empty())
    return group_->who(missing) + " did not arrive at " + round_of(*op.tensor, op.round) +
           within_op_timeout();
  return group_->who(0) + " did not deliver the sum of " + round_of(*op.tensor, op.round) +
         within_op_timeout() + (joins_job_ ? "; it was waiting for the servers" : "");
}

// ---- local rank 0 ----

void LocalWorker::run_machine_sum() {
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
      wake = std::min(wake, op->poll_soon ? SteadyClock::now() + std::chrono::microseconds(20)
                                          : op->deadline);
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
      publish(*op, e.code(), e.what());
      return true;
    }
  }
  if (op->side) return advance_on_device(op);
  if (op->remote_done->load()) {
    int rc = member_->client().poll(*op->remote, &why);
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
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const auto& p) { return p.get() == &op; }),
                   pending_.end());
  }
  done_cv_.notify_all();
}

// ---- the other local ranks ----

int LocalWorker::collect(LocalOp& op, bool block, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (op.done) {
      if (op.code != 0) *error = op.error;
      return op.code;
    }
  }
  TensorSegment& seg = *op.tensor->segment;
  int code = 0;
  std::string why;
  std::vector<int> missing;
  auto ready = [&] {
    if (seg.results() > op.round || seg.refused(&code, &why)) return true;
    why = deserted(op, &missing);
    if (!why.empty()) code = CARAVAN_ERR_PEER_LOST;
    return !why.empty();
  };
  try {
    bool arrived = block ? group_->wait_until(ready, op.deadline) : (group_->check(), ready());
    if (!arrived && !block) return kPending;
    if (!arrived) {
      code = CARAVAN_ERR_TIMEOUT;
      why = overdue(op, missing);
      seg.refuse(code, why);
    } else if (seg.results() > op.round) {
      code = seg.result(&why);
      if (code == 0 && op.side) {
        int rc = finish_on_device(op, block, &why);
        if (rc == kPending) return kPending;
        code = rc;
      } else if (code == 0) {
        std::memcpy(op.data, seg.slot(0), seg.bytes());
      }
    }
  } catch (const Error& e) {
    code = e.code();
    why = e.what();
  }
  complete(op, code, why);
  if (code != 0) *error = why;
  return code;
}

void LocalWorker::drain() {
  auto deadline = SteadyClock::now() + std::chrono::seconds(config_.op_timeout_s);
  if (!is_root()) {
    std::vector<std::shared_ptr<LocalOp>> ops;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops = pending_;
    }
    std::string ignored;  // as in the distributed path: failures were the waiters' to see
    for (auto& op : ops) collect(*op, true, &ignored);
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!done_cv_.wait_until(lock, deadline, [&] { return pending_.empty(); }))
    throw Error(CARAVAN_ERR_TIMEOUT, std::to_string(pending_.size()) +
                                         " push_pull operations did not finish" +
                                         within_op_timeout());
}

// ---- both ----

int LocalWorker::poll(Op& base, std::string* error) {
  auto& op = static_cast<LocalOp&>(base);
  if (!is_root()) {
    int rc = collect(op, false, error);
    return rc == kPending ? 0 : (rc == 0 ? 1 : rc);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!op.done) return 0;
    if (op.code != 0) *error = op.error;
    if (op.code != 0) return op.code;
  }
  if (op.side) {
    int rc = finish_on_device(op, false, error);
    if (rc == kPending) return 0;
    if (rc != 0) return rc;
  }
  return 1;
}

int LocalWorker::wait(Op& base, std::string* error) {
  auto& op = static_cast<LocalOp&>(base);
  if (!is_root()) return collect(op, true, error);
  std::unique_lock<std::mutex> lock(mu_);
  // The machine-sum thread ends every op by its deadline; the second of
  // slack only covers the time it takes to notice.
  if (!done_cv_.wait_until(lock, op.deadline + std::chrono::seconds(1), [&] { return op.done; })) {
    *error =
        "push_pull of " + round_of(*op.tensor, op.round) + " did not finish" + within_op_timeout();
    return CARAVAN_ERR_TIMEOUT;
  }
  if (op.code != 0) *error = op.error;
  if (op.code != 0 || !op.side) return op.code;
  lock.unlock();
  return finish_on_device(op, true, error);
}

void LocalWorker::leave() {
  try {
    drain();
    group_->leave_barrier(config_.op_timeout_s);
    stop_machine_sum();
  } catch (const Error& e) {
    group_->abort(e.code(),
                  group_->who(group_->local_rank()) + " failed in caravan_shutdown(): " + e.what());
    throw;
  }
  // The machine is done: from here a failure is only the job's.
  group_->mark_left();
  if (member_) member_->leave();
}

}  // namespace caravan
