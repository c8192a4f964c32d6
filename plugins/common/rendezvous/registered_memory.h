// The memory the protocol registers with its transport, bounded by
// max_registered_bytes: pools of registered buffers, reused, and callers'
// own memory registered for one transfer and charged against the same
// limit.
//
// Sending and receiving get half the limit each: a sender waiting for
// completion notices then never starves the receive side those notices
// depend on. The bounce buffer comes out of the receiving half.
//
// Needs no protocol lock: each pool has its own, and registering a
// caller's memory touches nothing shared, so senders on several threads
// copy and register at once.
#ifndef CARAVAN_RENDEZVOUS_REGISTERED_MEMORY_H
#define CARAVAN_RENDEZVOUS_REGISTERED_MEMORY_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "rendezvous/config.h"
#include "rendezvous/pool.h"
#include "rendezvous/transport.h"

namespace caravan::rendezvous {

class RegisteredMemory {
 public:
  RegisteredMemory(Transport& t, const Config& cfg, LogFn log);
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;

  // Frames, staging copies and callers' registrations.
  BufferPool& send_pool() { return send_; }
  // The receive ring, buffers remote reads land in, buffers lent to senders.
  BufferPool& receive_pool() { return receive_; }
  // The one buffer a request to send is read through when the receive pool
  // is full of messages the application holds.
  BufferPool& bounce_pool() { return bounce_; }
  size_t bounce_bytes() const { return bounce_bytes_; }

  enum class Registered { kDone, kNoRoom, kFailed };
  // Registers each segment whose bit is clear in skip_mask for one transfer,
  // charging them to the send pool: kNoRoom (only with may_wait) when the
  // limit is reached, kFailed (warned once) when the transport refuses, so
  // the caller copies instead. regs gets one entry per segment.
  Registered register_segments(const std::vector<caravan_segment_v2>& segs, uint64_t skip_mask,
                               bool may_wait, std::vector<Registration>* regs, size_t* charged);
  // Undoes register_segments(); leaves regs empty and charged 0.
  void deregister_segments(std::vector<Registration>* regs, size_t* charged);

  // The three pools together.
  PoolStats stats();
  // Deregisters and frees every pooled buffer, in use or not.
  void clear();

 private:
  Transport& t_;
  LogFn log_;
  size_t bounce_bytes_;
  BufferPool send_;
  BufferPool receive_;
  BufferPool bounce_;  // holds one buffer at most
  std::atomic<bool> warned_register_{false};
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_REGISTERED_MEMORY_H
