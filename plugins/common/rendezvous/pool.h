// Registered buffers, grouped in size classes and reused, so steady-state
// traffic never registers memory again. The total registered is bounded:
// idle buffers of other classes are dropped to make room, and a request
// that may wait gets nothing rather than pushing past the limit. Memory the
// pool does not own (a caller's, registered for one transfer) is charged
// against the same limit.
#ifndef CARAVAN_RENDEZVOUS_POOL_H
#define CARAVAN_RENDEZVOUS_POOL_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace caravan::rendezvous {

// What a transport hands back for registered memory.
struct Registration {
  void* handle = nullptr;    // the transport's own object
  void* desc = nullptr;      // local descriptor for posting
  uint64_t key = 0;          // remote key
  uint64_t remote_base = 0;  // what a peer adds offsets to
};

struct Buffer {
  char* data = nullptr;
  size_t capacity = 0;
  Registration reg;
};

struct PoolStats {
  size_t registered_bytes = 0;
  size_t peak_bytes = 0;
  size_t limit_bytes = 0;
  size_t buffers = 0;
  size_t registrations = 0;         // over the pool's life
  size_t caller_registrations = 0;  // of memory charged, over the pool's life
};

class BufferPool {
 public:
  using RegisterFn = std::function<Registration(void*, size_t)>;  // throws on failure
  using DeregisterFn = std::function<void(const Registration&)>;

  BufferPool(RegisterFn reg, DeregisterFn dereg, size_t limit_bytes);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A buffer of at least `bytes`. With may_wait, returns nullptr when the
  // limit would be passed while other buffers are in use (they come back);
  // otherwise goes past the limit rather than fail.
  Buffer* acquire(size_t bytes, bool may_wait);
  void put(Buffer* b);
  // Counts `bytes` of registrations made outside the pool against the
  // limit; false (with may_wait) on the terms acquire() returns nullptr.
  bool charge(size_t bytes, bool may_wait);
  void discharge(size_t bytes);
  // Deregisters and frees every buffer, in use or not.
  void clear();
  PoolStats stats();
  static size_t class_of(size_t bytes);

 private:
  Buffer* make(size_t cls);
  void destroy(Buffer* b);
  bool make_room(size_t bytes, bool may_wait);  // under mu_
  void count_in(size_t bytes);                  // under mu_

  RegisterFn reg_;
  DeregisterFn dereg_;
  std::mutex mu_;
  std::map<size_t, std::vector<Buffer*>> idle_;
  std::unordered_set<Buffer*> all_;
  size_t in_use_bytes_ = 0;
  PoolStats stats_;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_POOL_H
