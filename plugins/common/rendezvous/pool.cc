#include "rendezvous/pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace caravan::rendezvous {

BufferPool::BufferPool(RegisterFn reg, DeregisterFn dereg, size_t limit_bytes)
    : reg_(std::move(reg)), dereg_(std::move(dereg)) {
  stats_.limit_bytes = limit_bytes;
}

BufferPool::~BufferPool() { clear(); }

// Quarter steps between powers of two: at most 25% waste, few classes.
size_t BufferPool::class_of(size_t bytes) {
  size_t cls = 4096;
  while (cls < bytes) cls <<= 1;
  if (cls <= 4096) return cls;
  size_t step = cls / 8;
  size_t c = cls / 2;
  while (c < bytes) c += step;
  return c;
}

Buffer* BufferPool::make(size_t cls) {
  void* mem = std::aligned_alloc(4096, cls);
  if (!mem) throw std::bad_alloc();
  auto* b = new Buffer;
  b->data = static_cast<char*>(mem);
  b->capacity = cls;
  try {
    b->reg = reg_(mem, cls);
  } catch (...) {
    std::free(mem);
    delete b;
    throw;
  }
  return b;
}

void BufferPool::destroy(Buffer* b) {
  dereg_(b->reg);
  std::free(b->data);
  stats_.registered_bytes -= b->capacity;
  --stats_.buffers;
  all_.erase(b);
  delete b;
}

Buffer* BufferPool::acquire(size_t bytes, bool may_wait) {
  size_t cls = class_of(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto& idle = idle_[cls];
  if (!idle.empty()) {
    Buffer* b = idle.back();
    idle.pop_back();
    in_use_bytes_ += b->capacity;
    return b;
  }
  if (!make_room(cls, may_wait)) return nullptr;
  Buffer* b = make(cls);
  all_.insert(b);
  count_in(cls);
  ++stats_.buffers;
  ++stats_.registrations;
  return b;
}

// Drops idle buffers (of other sizes, since a fitting one would have been
// taken) until `bytes` more fit under the limit.
bool BufferPool::make_room(size_t bytes, bool may_wait) {
  for (auto it = idle_.begin();
       it != idle_.end() && stats_.registered_bytes + bytes > stats_.limit_bytes;) {
    while (!it->second.empty() && stats_.registered_bytes + bytes > stats_.limit_bytes) {
      destroy(it->second.back());
      it->second.pop_back();
    }
    it = it->second.empty() ? idle_.erase(it) : std::next(it);
  }
  return !(stats_.registered_bytes + bytes > stats_.limit_bytes && may_wait && in_use_bytes_ > 0);
}

void BufferPool::count_in(size_t bytes) {
  stats_.registered_bytes += bytes;
  stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.registered_bytes);
  in_use_bytes_ += bytes;
}

bool BufferPool::charge(size_t bytes, bool may_wait) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!make_room(bytes, may_wait)) return false;
  count_in(bytes);
  ++stats_.caller_registrations;
  return true;
}

void BufferPool::discharge(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.registered_bytes -= bytes;
  in_use_bytes_ -= bytes;
}

void BufferPool::put(Buffer* b) {
  if (!b) return;
  std::lock_guard<std::mutex> lock(mu_);
  in_use_bytes_ -= b->capacity;
  idle_[b->capacity].push_back(b);
}

void BufferPool::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Buffer*> all(all_.begin(), all_.end());
  for (Buffer* b : all) destroy(b);
  idle_.clear();
  in_use_bytes_ = 0;
}

PoolStats BufferPool::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace caravan::rendezvous
