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
        member_ = std::make_unique<DistributedWorker>(config, [group](int code,
                                                                      const std::string& why) {
          // A regroup (CARAVAN_ELASTIC) is no failure of the machine:
          // its operations end with it, and every local rank rejoins.
          if (code != CARAVAN_ERR_REGROUPED)
            group->abort(CARAVAN_ERR_PEER_LOST, "the job failed (" + group->who(0) + "): " + why);
        });
        machine_rank_ = member_->rank();
        num_machines_ = member_->size();  // after a regroup, the scheduler's count
        // Only this process talks to the scheduler: without this the job
        // heard that it, not the member that died, was lost. The machine
        // leaves whole: with CARAVAN_ELASTIC the job goes on without it,
        // otherwise the scheduler ends it, naming the member.
        DistributedWorker* member = member_.get();
        group_->set_member_lost_handler(
            [member](const std::string& why) { member->leave_job(why); });
      }
      group_->publish_machine_rank(machine_rank_, num_machines_);
    } catch (const Error& e) {
      group_->set_member_lost_handler(nullptr);  // member_ goes before group_
      group_->abort(e.code(), group_->who(0) + " could not " +
                                  (joins_job ? "join the job: " : "start: ") + e.what());
      throw;
    }
    thread_ = std::thread([this] { run_machine_sum(); });
  } else {
    // Local rank 0 reports its own failure to join through the group; this
    // deadline only guards against it hanging. Resuming, local rank 0
    // waits up to CARAVAN_RESUME_TIMEOUT for the other machines.
    int limit = 2 * config.connect_timeout_s + (config.resuming ? config.resume_timeout_s : 0);
    machine_rank_ = group_->wait_machine_rank(
        SteadyClock::now() + std::chrono::seconds(limit),
        std::string(joins_job ? "join the job" : "start") + " within " + std::to_string(limit) +
            (config.resuming ? " s (2 x CARAVAN_CONNECT_TIMEOUT + CARAVAN_RESUME_TIMEOUT)"
                             : " s (2 x CARAVAN_CONNECT_TIMEOUT)"));
    num_machines_ = group_->machines();
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
  if (member_ && !group_->left()) member_->leave_job(group_->failure());
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

void LocalWorker::leave() { leave_machine(Leaving::kJob); }

bool LocalWorker::suspend() {
  leave_machine(Leaving::kSuspend);
  return joins_job_;
}

JobConfig::Generation LocalWorker::generation() const {
  return member_ ? member_->generation() : JobConfig::Generation{};
}

bool LocalWorker::regrouped() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (saw_regroup_) return true;
  }
  return member_ && member_->regrouped();
}

void LocalWorker::leave_generation() { leave_machine(Leaving::kGeneration); }

void LocalWorker::leave_machine(Leaving how) {
  try {
    drain();
    group_->leave_barrier(config_.op_timeout_s);
    stop_machine_sum();
  } catch (const Error& e) {
    const char* call = how == Leaving::kJob       ? "caravan_shutdown()"
                       : how == Leaving::kSuspend ? "caravan_suspend()"
                                                  : "caravan_rejoin()";
    group_->abort(e.code(),
                  group_->who(group_->local_rank()) + " failed in " + call + ": " + e.what());
    throw;
  }
  // The machine is done: from here a failure is only the job's.
  group_->mark_left();
  // After a regroup the node goes without the job's barrier (caravan_rejoin).
  if (member_ && how == Leaving::kSuspend) member_->suspend();
  if (member_ && how == Leaving::kJob) member_->leave();
}

}  // namespace caravan
