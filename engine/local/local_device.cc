// The local group's push_pull of device memory, summed on the device: every
// local rank r > 0 copies its tensor into a device buffer of its own and
// records an IPC event after the copy; local rank 0 waits for those events
// and sums its tensor and the others' buffers (opened through IPC) into its
// own buffer with the device reducer, push_pulls that through the servers
// when the job has them, records its IPC event, and every local rank copies
// the result from local rank 0's buffer into its tensor.
//
// Each process does this on one stream of its own, so the order is:
//   rank r > 0: [after the caller's stream] copy tensor -> mine, record
//               mine, contribute round n ... result n published: wait for
//               rank 0's event, copy rank 0's buffer -> tensor, record done
//   rank 0:     [after the caller's stream]; once every rank contributed n:
//               wait for every mine, sum -> its buffer; with servers: copy
//               it to slot 0, push_pull slot 0 once the copy passed, copy
//               back; record its event, copy its buffer -> tensor, record
//               done; publish result n once its event has passed.
// A rank records `mine` for round n + 1 only after enqueuing its copy of
// result n on the same stream, so rank 0's sum of round n + 1 (which waits
// for it) cannot overwrite its buffer before everyone has read result n;
// rank 0 publishes result n only after its event passed, so the sum no
// longer reads anyone's buffer when they write round n + 1 into it.
#include <chrono>

#include "engine/base/error.h"
#include "engine/base/log.h"
#include "engine/local/local_op.h"
#include "engine/local/local_worker.h"
#include "engine/local/tensor_segment.h"

namespace caravan {

std::shared_ptr<Worker::Op> LocalWorker::submit_on_device(
    const std::string& name, void* data, size_t count, int dtype, int priority, int root,
    void* stream, const std::shared_ptr<DeviceMemory>& device) {
  if (root != kSum || !device->has_ipc()) return nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!device_) {
      device_stream_ = device->stream_create();
      device_ = device;
      CARAVAN_LOG(INFO) << "push_pulls of device memory are summed on the device by local rank 0 ("
                        << device_->description() << ", buffers shared through IPC)";
    }
  }
  std::shared_ptr<LocalOp> op = start_op(name, count, dtype, priority, kSum);
  op->data = static_cast<char*>(data);
  TensorSegment& seg = *op->tensor->segment;
  try {
    DeviceSide& d = device_side(*op->tensor);
    op->side = &d;
    device_->event_record(d.input, stream);
    device_->stream_wait(device_stream_, d.input);
    if (!is_root()) {
      device_->copy(d.buffer, data, seg.bytes(), device_stream_);
      device_->event_record(d.mine, device_stream_);
    }
  } catch (const Error& e) {
    // Never contributed: the others learn why rather than wait for it.
    seg.refuse(e.code(), group_->who(group_->local_rank()) + ": " + e.what());
    complete(*op, e.code(), e.what());
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(op);
  }
  seg.contribute(group_->local_rank(), op->round + 1, kDeviceSum);
  return op;
}

LocalWorker::DeviceSide& LocalWorker::device_side(LocalTensor& t) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<DeviceSide>& slot = device_sides_[t.name];
  if (slot) return *slot;
  auto d = std::make_unique<DeviceSide>();
  d->peer_buffers.assign(static_cast<size_t>(group_->local_size()), nullptr);
  d->peer_events.assign(static_cast<size_t>(group_->local_size()), nullptr);
  d->buffer = static_cast<char*>(device_->device_alloc(t.segment->bytes()));
  slot = std::move(d);  // freed with the rest from here on
  std::string memory = device_->ipc_export(slot->buffer), event;
  slot->mine = device_->ipc_event_create(&event);
  slot->input = device_->event_create();
  slot->staged = device_->event_create();
  slot->done = device_->event_create();
  t.segment->set_device_handles(group_->local_rank(), memory, event);
  return *slot;
}

void LocalWorker::open_peer(DeviceSide& d, TensorSegment& seg, int r) {
  if (d.peer_buffers[static_cast<size_t>(r)]) return;
  std::string memory, event;
  // Set before its first contribution, which the caller has seen.
  if (!seg.device_handles(r, &memory, &event))
    throw Error(CARAVAN_ERR_INTERNAL, group_->who(r) + " shared no device buffer");
  d.peer_buffers[static_cast<size_t>(r)] = static_cast<char*>(device_->ipc_open(memory));
  d.peer_events[static_cast<size_t>(r)] = device_->ipc_event_open(event);
}

void LocalWorker::gather_on_device(LocalOp& op) {
  TensorSegment& seg = *op.tensor->segment;
  DeviceSide& d = *op.side;
  std::vector<const void*> sources{op.data};
  for (int r = 1; r < group_->local_size(); ++r) {
    open_peer(d, seg, r);
    device_->stream_wait(device_stream_, d.peer_events[static_cast<size_t>(r)]);
    sources.push_back(d.peer_buffers[static_cast<size_t>(r)]);
  }
  device_->sum_many(d.buffer, sources.data(), sources.size(), op.tensor->count, op.tensor->dtype,
                    device_stream_);
}

bool LocalWorker::advance_on_device(const std::shared_ptr<LocalOp>& op) {
  LocalOp& o = *op;
  DeviceSide& d = *o.side;
  TensorSegment& seg = *o.tensor->segment;
  LocalTensor& t = *o.tensor;
  // The result is in local rank 0's buffer: its event for the others, then
  // its own copy.
  auto result_ready = [&] {
    device_->event_record(d.mine, device_stream_);
    device_->copy(o.data, d.buffer, seg.bytes(), device_stream_);
    device_->event_record(d.done, device_stream_);
    o.copying_back = true;
    o.phase = 3;
  };
  auto overdue = [&](const std::string& what) {
    if (SteadyClock::now() < o.deadline) return false;
    std::string msg = round_of(t, o.round) + ": " + what + within_op_timeout();
    seg.refuse(CARAVAN_ERR_TIMEOUT, msg);
    complete(o, CARAVAN_ERR_TIMEOUT, msg);
    return true;
  };
  try {
    switch (o.phase) {
      case 0:  // every local rank contributed
        if (!gather(o)) return true;
        o.summed = true;
        if (member_) {
          device_->copy(seg.slot(0), d.buffer, seg.bytes(), device_stream_);
          device_->event_record(d.staged, device_stream_);
          o.phase = 1;
        } else {
          result_ready();
        }
        o.poll_soon = true;
        return false;
      case 1: {  // the machine's sum on its way to slot 0
        if (!device_->event_done(d.staged))
          return overdue("the machine's sum did not reach host memory");
        Doorbell bell = group_->doorbell();
        auto flag = o.remote_done;
        o.remote = member_->client().submit(t.name, seg.slot(0), t.count, t.dtype, o.priority, kSum,
                                            [flag, bell] {
                                              flag->store(true);
                                              bell.ring();
                                            });
        o.phase = 2;
        o.poll_soon = false;  // the doorbell rings when the servers answer
        return false;
      }
      case 2: {  // through the servers
        if (!o.remote_done->load()) return overdue("push_pull through the servers did not finish");
        std::string why;
        int rc = member_->client().poll(*o.remote, &why);
        if (rc < 0) {
          publish(o, rc, why);
          return true;
        }
        device_->copy(d.buffer, seg.slot(0), seg.bytes(), device_stream_);
        result_ready();
        o.poll_soon = true;
        return false;
      }
      default:  // 3: the result on its way to the buffer the others read
        if (!device_->event_done(d.mine))
          return overdue("the machine's sum did not end on the device");
        o.poll_soon = false;
        publish(o, 0, "");
        return true;
    }
  } catch (const Error& e) {
    o.poll_soon = false;
    publish(o, e.code(), e.what());
    return true;
  }
}

int LocalWorker::finish_on_device(LocalOp& op, bool block, std::string* error) {
  DeviceSide& d = *op.side;
  try {
    if (!op.copying_back) {  // local ranks > 0: from local rank 0's buffer
      TensorSegment& seg = *op.tensor->segment;
      open_peer(d, seg, 0);
      device_->stream_wait(device_stream_, d.peer_events[0]);
      device_->copy(op.data, d.peer_buffers[0], seg.bytes(), device_stream_);
      device_->event_record(d.done, device_stream_);
      op.copying_back = true;
    }
    if (block ? device_->wait(d.done, op.deadline) : device_->event_done(d.done)) return 0;
    if (!block) return kPending;
    *error = "the copy of " + round_of(*op.tensor, op.round) +
             "'s result into device memory did not end" + within_op_timeout();
    return CARAVAN_ERR_TIMEOUT;
  } catch (const Error& e) {
    *error = e.what();
    return e.code();
  }
}

void LocalWorker::free_device_sides() noexcept {
  if (!device_) return;
  try {
    // Nothing may still run on what is freed below.
    device_->drain(device_stream_, SteadyClock::now() + std::chrono::seconds(config_.op_timeout_s));
    for (auto& [name, d] : device_sides_) {
      for (char* p : d->peer_buffers)
        if (p) device_->ipc_close(p);
      for (void* e : d->peer_events)
        if (e) device_->event_destroy(e);
      for (void* e : {d->mine, d->input, d->staged, d->done})
        if (e) device_->event_destroy(e);
      if (d->buffer) device_->device_free(d->buffer);
    }
    device_->stream_destroy(device_stream_);
  } catch (const Error& e) {
    CARAVAN_LOG(WARNING) << "freeing the local group's device buffers failed: " << e.what();
  }
  device_sides_.clear();
  device_.reset();
}

}  // namespace caravan
