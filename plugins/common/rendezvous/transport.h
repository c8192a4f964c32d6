// What a van provides to the rendezvous protocol: posting, registration and
// wake-up over its own fabric library. Addresses are the transport's own
// peer handles.
#ifndef CARAVAN_RENDEZVOUS_TRANSPORT_H
#define CARAVAN_RENDEZVOUS_TRANSPORT_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "rendezvous/pool.h"

namespace caravan::rendezvous {

class Transport {
 public:
  enum class Post { kPosted, kAgain, kFailed };
  virtual ~Transport() = default;
  // `ctx` is the operation's context: its first 64 bytes are the
  // transport's to use while the operation is in flight, and completions
  // name it back through Protocol::complete().
  virtual Post post_send(uint64_t to, const void* buf, size_t len, void* desc, void* ctx,
                         std::string* err) = 0;
  virtual Post post_recv(void* buf, size_t len, void* desc, void* ctx, std::string* err) = 0;
  virtual Post post_read(uint64_t from, void* local, size_t len, void* desc, uint64_t raddr,
                         uint64_t key, void* ctx, std::string* err) = 0;
  // Its completion must mean the bytes are in the peer's memory, since the
  // notice that hands them to the peer's application goes after it.
  virtual Post post_write(uint64_t to, const void* local, size_t len, void* desc, uint64_t raddr,
                          uint64_t key, void* ctx, std::string* err) = 0;
  // A peer's endpoint name (from its hello) as an address; throws on failure.
  virtual uint64_t resolve(const std::string& name) = 0;
  // The text a peer is named by in messages and logs.
  virtual std::string describe(const std::string& name) = 0;
  virtual Registration register_memory(void* p, size_t len) = 0;
  virtual void deregister(const Registration& r) = 0;
  // Asks for a posted receive to be taken back; its completion (an error)
  // still comes through Protocol::complete(). False when the transport
  // cannot cancel it.
  virtual bool cancel(void* ctx) {
    (void)ctx;
    return false;
  }
  // Makes the progress thread call Protocol::pump() soon. Any thread; never blocks.
  virtual void wake() = 0;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_TRANSPORT_H
