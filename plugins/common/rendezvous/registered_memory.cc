#include "rendezvous/registered_memory.h"

#include <algorithm>
#include <exception>
#include <string>

namespace caravan::rendezvous {

namespace {

// Large enough that reading through it costs few round trips, small next
// to the receive pool it is taken from.
size_t bounce_size(const Config& cfg) {
  return BufferPool::class_of(
      std::max(cfg.eager_bytes, std::min(cfg.read_chunk, cfg.max_registered_bytes / 16)));
}

}  // namespace

RegisteredMemory::RegisteredMemory(Transport& t, const Config& cfg, LogFn log)
    : t_(t),
      log_(std::move(log)),
      bounce_bytes_(bounce_size(cfg)),
      send_([this](void* p, size_t n) { return t_.register_memory(p, n); },
            [this](const Registration& r) { t_.deregister(r); }, cfg.max_registered_bytes / 2),
      receive_([this](void* p, size_t n) { return t_.register_memory(p, n); },
               [this](const Registration& r) { t_.deregister(r); },
               cfg.max_registered_bytes / 2 > bounce_bytes_
                   ? cfg.max_registered_bytes / 2 - bounce_bytes_
                   : 0),
      bounce_([this](void* p, size_t n) { return t_.register_memory(p, n); },
              [this](const Registration& r) { t_.deregister(r); }, bounce_bytes_) {}

// A registration cached past its transfer could outlive the memory (freed,
// then reused at the same address) and be read stale, so each is for one
// transfer alone. libfabric keeps its own cache with memory monitors
// underneath where registering is costly.
RegisteredMemory::Registered RegisteredMemory::register_segments(
    const std::vector<caravan_segment_v2>& segs, uint64_t skip_mask, bool may_wait,
    std::vector<Registration>* regs, size_t* charged) {
  size_t bytes = 0;
  for (size_t i = 0; i < segs.size(); ++i)
    if (!(skip_mask >> i & 1)) bytes += segs[i].len;
  if (!send_.charge(bytes, may_wait)) return Registered::kNoRoom;
  *charged = bytes;
  regs->assign(segs.size(), Registration{});
  try {
    for (size_t i = 0; i < segs.size(); ++i)
      if (!(skip_mask >> i & 1))
        (*regs)[i] = t_.register_memory(const_cast<void*>(segs[i].data), segs[i].len);
  } catch (const std::exception& e) {
    deregister_segments(regs, charged);
    if (!warned_register_.exchange(true))
      log_(CARAVAN_LOG_WARNING,
           std::string("copying large messages instead of registering them: ") + e.what());
    return Registered::kFailed;
  }
  return Registered::kDone;
}

void RegisteredMemory::deregister_segments(std::vector<Registration>* regs, size_t* charged) {
  for (const Registration& r : *regs)
    if (r.handle) t_.deregister(r);
  regs->clear();
  send_.discharge(*charged);
  *charged = 0;
}

PoolStats RegisteredMemory::stats() {
  PoolStats a = send_.stats();
  for (const PoolStats& b : {receive_.stats(), bounce_.stats()}) {
    a.registered_bytes += b.registered_bytes;
    a.peak_bytes += b.peak_bytes;
    a.limit_bytes += b.limit_bytes;
    a.buffers += b.buffers;
    a.registrations += b.registrations;
    a.caller_registrations += b.caller_registrations;
  }
  return a;
}

void RegisteredMemory::clear() {
  send_.clear();
  receive_.clear();
  bounce_.clear();
}

}  // namespace caravan::rendezvous
