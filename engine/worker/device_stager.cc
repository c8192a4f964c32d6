#include "engine/worker/device_stager.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include "caravan/caravan.h"
#include "engine/base/dtype.h"
#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/base/thread_name.h"
#include "engine/base/timeline.h"

namespace caravan {

using Clock = std::chrono::steady_clock;

// One tensor's page-locked buffer and the events that order its copies,
// kept between steps (guarded by the stager's mu_).
struct DeviceStager::Staging {
  std::string name;
  char* host = nullptr;
  size_t bytes = 0;
  DeviceMemory::Event input = nullptr;     // the caller's stream reached the tensor
  std::vector<DeviceMemory::Event> ready;  // per partition: copied out
  DeviceMemory::Event back = nullptr;      // the last copy back is done
  bool in_use = false;
  bool cached = false;  // counted in cached_bytes_, kept for reuse
  bool idle = false;    // in idle_
  std::list<Staging*>::iterator idle_at;
};

struct DeviceStager::DeviceOp final : Worker::Op {
  std::string name;
  std::string what;  // "push_pull of 'w'"
  char* device = nullptr;
  Staging* staging = nullptr;  // null: the worker never touches the values
  bool sends = false, gets = false;
  // The worker's op on the staging buffer; for a whole-tensor op set by the
  // staging thread (under mu) once the copy out has ended.
  std::shared_ptr<Worker::Op> inner;
  // A worker that takes the tensor in one piece: what to submit it with.
  struct Whole {
    size_t count;
    int dtype, priority, root;
  };
  std::optional<Whole> whole;
  std::vector<std::pair<size_t, size_t>> parts;
  std::function<void(size_t)> release;
  // The timeline's, when it traces this op (Worker::Pipelined::trace): when
  // the copies out were queued, and when each partition's copy back was.
  std::function<void(const char*, size_t, int64_t, int64_t)> trace;
  std::function<void()> trace_done;
  int64_t copies_out_queued_us = 0;
  std::vector<std::atomic<int64_t>> copy_back_queued_us;
  size_t next = 0;  // the staging thread's: partitions sent so far
  Clock::time_point started = Clock::now();
  std::atomic<size_t> stored{0};
  std::atomic<bool> back_recorded{false};

  std::mutex mu;               // code, error, finished, result, inner of a whole-tensor op
  std::condition_variable cv;  // inner set or code set
  int code = 0;
  std::string error;
  bool finished = false;  // the staging buffer is given back
  int result = 0;

  void fail(int c, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    if (code == 0) {
      code = c;
      error = what + " failed: " + why;
    }
    cv.notify_all();
  }
};

DeviceStager::DeviceStager(Worker& worker, std::shared_ptr<DeviceMemory> device, int op_timeout_s,
                           size_t cache_bytes)
    : worker_(worker),
      device_(std::move(device)),
      op_timeout_s_(op_timeout_s),
      cache_bytes_(cache_bytes) {
  d2h_ = device_->stream_create();
  h2d_ = device_->stream_create();
  thread_ = std::thread([this] { run(); });
  CARAVAN_LOG(INFO) << "device tensors are staged through host memory by " << description()
                    << " (CARAVAN_STAGING_BYTES=" << cache_bytes_ << " kept for reuse)";
}

DeviceStager::~DeviceStager() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // Nothing may still copy from or into the buffers freed below.
  try {
    for (DeviceMemory::Stream s : {d2h_, h2d_})
      device_->drain(s, Clock::now() + std::chrono::seconds(op_timeout_s_));
    for (auto& [name, s] : staging_) free_staging(*s);
    for (auto& s : failed_) free_staging(*s);
    device_->stream_destroy(d2h_);
    device_->stream_destroy(h2d_);
  } catch (const Error& e) {
    CARAVAN_LOG(WARNING) << "freeing the device staging buffers failed: " << e.what();
  }
}

void DeviceStager::free_staging(Staging& s) {
  if (s.host) device_->host_free(s.host);
  for (DeviceMemory::Event e : s.ready) device_->event_destroy(e);
  if (s.input) device_->event_destroy(s.input);
  if (s.back) device_->event_destroy(s.back);
  s.host = nullptr;
  s.ready.clear();
  s.input = s.back = nullptr;
}

DeviceStager::Staging& DeviceStager::take_staging(const std::string& name, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = staging_.find(name);
  if (it != staging_.end()) {
    Staging& s = *it->second;
    if (s.in_use)
      throw Error(CARAVAN_ERR_BUSY,
                  "tensor '" + name + "' already has an operation in flight; wait for it first");
    if (s.idle) idle_.erase(s.idle_at);
    s.idle = false;
    if (s.bytes == bytes) {
      s.in_use = true;
      return s;
    }
    // Another size: the worker refuses it (MISMATCH) after this.
    if (s.cached) cached_bytes_ -= s.bytes;
    free_staging(s);
    staging_.erase(it);
  }
  // Least recently used idle buffers go first, down to the bound.
  while (cached_bytes_ + bytes > cache_bytes_ && !idle_.empty()) {
    Staging* old = idle_.front();
    idle_.pop_front();
    cached_bytes_ -= old->bytes;
    free_staging(*old);
    staging_.erase(old->name);
  }
  auto s = std::make_unique<Staging>();
  s->name = name;
  s->bytes = bytes;
  s->host = static_cast<char*>(device_->host_alloc(bytes));
  try {
    s->input = device_->event_create();
    s->back = device_->event_create();
  } catch (...) {
    free_staging(*s);
    throw;
  }
  s->cached = cached_bytes_ + bytes <= cache_bytes_;
  if (s->cached) cached_bytes_ += bytes;
  s->in_use = true;
  Staging& ref = *s;
  staging_[name] = std::move(s);
  return ref;
}

void DeviceStager::give_back(Staging& s, bool reusable) {
  std::lock_guard<std::mutex> lock(mu_);
  s.in_use = false;
  if (reusable && s.cached) {
    idle_.push_back(&s);
    s.idle_at = std::prev(idle_.end());
    s.idle = true;
    return;
  }
  if (s.cached) cached_bytes_ -= s.bytes;
  auto it = staging_.find(s.name);
  std::unique_ptr<Staging> owned = std::move(it->second);
  staging_.erase(it);
  if (reusable)
    free_staging(*owned);
  else
    failed_.push_back(std::move(owned));  // the van or a late answer may still touch it
}

std::shared_ptr<Worker::Op> DeviceStager::submit(const std::string& name, void* data, size_t count,
                                                 int dtype, int priority, int root, void* stream) {
  auto op = std::make_shared<DeviceOp>();
  op->name = name;
  op->what =
      std::string(root == kSum ? "push_pull" : "broadcast") + " of device tensor '" + name + "'";
  op->device = static_cast<char*>(data);
  int device = device_->device_of(data);
  if (device < 0)
    throw Error(CARAVAN_ERR_INVALID_ARGUMENT,
                "tensor '" + name + "': its data is not device memory (" + description() +
                    " says it is host memory); pass host memory to caravan_push_pull() or "
                    "caravan_broadcast()");
  if (!worker_.moves_values()) {
    // The sum over one worker, or its own broadcast, is the data itself.
    op->inner = worker_.submit(name, data, count, dtype, priority, root);
    return op;
  }
  if (auto own =
          worker_.submit_on_device(name, data, count, dtype, priority, root, stream, device_)) {
    op->inner = std::move(own);
    return op;
  }
  int rank = worker_.rank();
  op->sends = root == kSum || root == rank;
  op->gets = root == kSum || root != rank;
  size_t bytes = count * dtype_size(dtype);
  Staging& s = take_staging(name, bytes);
  op->staging = &s;
  try {
    // Copies out wait for the work queued so far on the caller's stream.
    // Copies back come after the copy out of the same bytes, except for a
    // broadcast's receivers, which copy nothing out: theirs wait too, as
    // they overwrite what that work may still read.
    device_->event_record(s.input, stream);
    if (op->sends) device_->stream_wait(d2h_, s.input);
    if (op->gets && !op->sends) device_->stream_wait(h2d_, s.input);
    std::weak_ptr<DeviceOp> weak = op;
    auto stored = [this, weak](size_t index) {
      auto o = weak.lock();
      if (!o) return;
      try {
        auto [offset, n] = o->parts[index];
        if (o->trace) o->copy_back_queued_us[index] = Timeline::now_us();
        device_->copy(o->device + offset, o->staging->host + offset, n, h2d_);
        if (++o->stored == o->parts.size()) {
          device_->event_record(o->staging->back, h2d_);
          o->back_recorded = true;
        }
      } catch (const Error& e) {
        o->fail(e.code(), e.what());
      }
    };
    std::optional<Worker::Pipelined> p =
        worker_.submit_pipelined(name, s.host, count, dtype, priority, root, stored);
    if (!p) {
      // The whole tensor in one piece: the staging thread submits it once
      // its copy out has ended, so the caller does not wait for its stream.
      op->parts = {{0, bytes}};
      if (!op->sends) {
        op->inner = worker_.submit(name, s.host, count, dtype, priority, root);
        return op;
      }
      if (s.ready.empty()) s.ready.push_back(device_->event_create());
      device_->copy(s.host, op->device, bytes, d2h_);
      device_->event_record(s.ready[0], d2h_);
      op->whole = DeviceOp::Whole{count, dtype, priority, root};
    } else {
      op->inner = p->op;
      op->parts = std::move(p->parts);
      op->release = std::move(p->release);
      if (p->trace) {
        op->copy_back_queued_us = std::vector<std::atomic<int64_t>>(op->parts.size());
        op->copies_out_queued_us = Timeline::now_us();
        op->trace_done = std::move(p->trace_done);
        op->trace = std::move(p->trace);  // last: `stored` reads copy_back_queued_us once it is set
      }
      if (!op->sends) {
        for (size_t i = 0; i < op->parts.size(); ++i) op->release(i);
        op->next = op->parts.size();
        return op;
      }
      while (s.ready.size() < op->parts.size()) s.ready.push_back(device_->event_create());
      for (size_t i = 0; i < op->parts.size(); ++i) {
        auto [offset, n] = op->parts[i];
        device_->copy(s.host + offset, op->device + offset, n, d2h_);
        device_->event_record(s.ready[i], d2h_);
      }
    }
  } catch (...) {
    // Not started (nothing was released): the buffer is free again.
    if (!op->inner) give_back(s, true);
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(op);
  }
  cv_.notify_all();
  return op;
}

void DeviceStager::run() {
  name_this_thread("cv-stager");
  // Copies out run in order on one stream, so only the oldest op's next
  // partition can be the next one done.
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<DeviceOp> op = queue_.front();
    lock.unlock();
    bool progressed = false, over = false;
    try {
      if (op->whole && device_->event_done(op->staging->ready[0])) {
        std::shared_ptr<Worker::Op> inner;
        try {
          inner = worker_.submit(op->name, op->staging->host, op->whole->count, op->whole->dtype,
                                 op->whole->priority, op->whole->root);
        } catch (const Error& e) {
          op->fail(e.code(), e.what());
        } catch (const std::exception& e) {
          op->fail(CARAVAN_ERR_INTERNAL, e.what());
        }
        {
          std::lock_guard<std::mutex> op_lock(op->mu);
          op->inner = std::move(inner);
        }
        op->cv.notify_all();
        op->next = op->parts.size();
        progressed = true;
      }
      while (!op->whole && op->next < op->parts.size() &&
             device_->event_done(op->staging->ready[op->next])) {
        // "copy to host": from the copies being queued to this one seen done.
        if (op->trace)
          op->trace("copy to host", op->next, op->copies_out_queued_us, Timeline::now_us());
        op->release(op->next++);
        progressed = true;
      }
      over = op->next == op->parts.size();
      if (!over && !progressed &&
          Clock::now() - op->started > std::chrono::seconds(op_timeout_s_)) {
        op->fail(CARAVAN_ERR_TIMEOUT, "partition " + std::to_string(op->next) + " of " +
                                          std::to_string(op->parts.size()) +
                                          " was not copied to host memory within " +
                                          std::to_string(op_timeout_s_) +
                                          " s (CARAVAN_OP_TIMEOUT); is the caller's stream stuck?");
        over = true;
      }
    } catch (const Error& e) {
      op->fail(e.code(), e.what());
      over = true;
    } catch (const std::exception& e) {
      op->fail(CARAVAN_ERR_INTERNAL, e.what());
      over = true;
    }
    // The copy in flight takes microseconds: look again soon.
    if (!over && !progressed) std::this_thread::sleep_for(std::chrono::microseconds(10));
    lock.lock();
    if (over) queue_.pop_front();
  }
}

int DeviceStager::check_done(DeviceOp& op, std::string* error, bool block) {
  // Told once: gives the staging buffer back (kept aside after a failure,
  // when the van or a late answer may still touch it).
  auto finish = [&](int result, bool reusable) -> int {
    std::lock_guard<std::mutex> lock(op.mu);
    if (!op.finished) {
      op.finished = true;
      op.result = op.code != 0 ? op.code : result;
      if (op.staging) give_back(*op.staging, reusable && op.code == 0);
      if (op.trace) {
        // "copy to device": from each copy back being queued to the last
        // one seen done (they end in order on one stream).
        int64_t now = Timeline::now_us();
        if (op.result == 1 && op.gets)
          for (size_t i = 0; i < op.copy_back_queued_us.size(); ++i)
            if (int64_t queued = op.copy_back_queued_us[i])
              op.trace("copy to device", i, queued, now);
        op.trace_done();
      }
    }
    if (op.result < 0) *error = op.error;
    return op.result;
  };
  int code;
  std::shared_ptr<Worker::Op> inner;
  {
    std::unique_lock<std::mutex> lock(op.mu);
    if (op.finished) {
      if (op.result < 0) *error = op.error;
      return op.result;
    }
    // A whole-tensor op is submitted by the staging thread: wait for it
    // (the staging thread fails it at the op deadline).
    auto started = [&] { return op.inner || op.code != 0; };
    if (!started()) {
      if (!block) return 0;
      op.cv.wait_for(lock, std::chrono::seconds(op_timeout_s_) + std::chrono::seconds(1), started);
    }
    code = op.code;
    inner = op.inner;
    if (!code && !inner) {
      code = op.code = CARAVAN_ERR_TIMEOUT;
      op.error = op.what + " failed: it was not copied out of device memory within " +
                 std::to_string(op_timeout_s_) + " s (CARAVAN_OP_TIMEOUT)";
    }
  }
  if (code != 0) return finish(code, false);
  std::string inner_error;
  int rc = block ? worker_.wait(*inner, &inner_error) : worker_.poll(*inner, &inner_error);
  if (rc < 0) {
    {
      std::lock_guard<std::mutex> lock(op.mu);
      if (op.code == 0) {
        op.code = rc;
        op.error = inner_error;  // the worker's message names the tensor already
      }
    }
    return finish(rc, false);
  }
  if (!block && rc == 0) return 0;  // poll: pending (wait returns 0 when done)
  if (op.staging && op.gets) {
    try {
      if (!op.back_recorded) {
        // The whole tensor came back at once (no partition was stored).
        device_->copy(op.device, op.staging->host, op.staging->bytes, h2d_);
        device_->event_record(op.staging->back, h2d_);
        op.back_recorded = true;
      }
      bool passed = block ? device_->wait(op.staging->back,
                                          Clock::now() + std::chrono::seconds(op_timeout_s_))
                          : device_->event_done(op.staging->back);
      if (!passed && !block) return 0;
      if (!passed) {
        op.fail(CARAVAN_ERR_TIMEOUT, "the copy back to device memory did not end within " +
                                         std::to_string(op_timeout_s_) + " s (CARAVAN_OP_TIMEOUT)");
        return finish(CARAVAN_ERR_TIMEOUT, false);
      }
    } catch (const Error& e) {
      op.fail(e.code(), e.what());
      return finish(e.code(), false);
    }
  }
  return finish(1, true);
}

int DeviceStager::poll(Worker::Op& op, std::string* error) {
  return check_done(static_cast<DeviceOp&>(op), error, false);
}

int DeviceStager::wait(Worker::Op& op, std::string* error) {
  int rc = check_done(static_cast<DeviceOp&>(op), error, true);
  return rc > 0 ? 0 : rc;
}

}  // namespace caravan
