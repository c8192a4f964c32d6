// The transport interface inside the engine. Every van, the in-tree ones
// included, is a plugin behind the C ABI; PluginVan adapts one to this class
// (an ABI 1 van through the lift in van_v1_lift.h).
//
// The data path runs one way: any thread may send; one thread, the node's
// receiving thread, calls poll(), which hands it both what arrived and
// which sends are over. Nothing is ever called back from inside send() or
// from a van's own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "caravan/plugin/van_v2.h"

namespace caravan {

struct JobConfig;

class Van {
 public:
  // A received message; the van's memory stays valid until it is destroyed.
  class Received {
   public:
    virtual ~Received() = default;
    size_t num_segments = 0;
    caravan_recv_segment_v2 segments[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
    std::string peer;
  };

  // One send: owns (or keeps alive) the memory its segments point at until
  // the van is done with it, and hears how it ended. sent() runs once, on
  // the polling thread; not at all when the van is destroyed first.
  class Sending {
   public:
    virtual ~Sending() = default;
    virtual void sent(caravan_status status) = 0;
  };

  // Where poll() hands the messages that arrived.
  class Inbox {
   public:
    virtual ~Inbox() = default;
    virtual void received(std::unique_ptr<Received> message) = 0;
  };

  virtual ~Van() = default;
  virtual const std::string& name() const = 0;
  virtual const caravan_van_properties_v2& properties() const = 0;
  // Binds and returns the address peers connect to. Throws on failure.
  virtual std::string listen(const std::string& host, int port) = 0;
  virtual void connect(uint64_t peer, const std::string& address) = 0;
  virtual void disconnect(uint64_t peer) = 0;
  // Throws on a synchronous failure (then `sending` hears nothing). `slot`:
  // nonzero for messages that recur (van_v2.h, send), else 0.
  virtual void send(uint64_t peer, uint64_t slot, const caravan_segment_v2* segments,
                    size_t num_segments, std::shared_ptr<Sending> sending) = 0;
  // Waits up to timeout_ms for events, then tells each finished send and
  // hands each arrived message to `inbox`, on the calling thread. False
  // when nothing came (time out or interrupt()). One thread at a time;
  // throws when the van failed.
  virtual bool poll(int timeout_ms, Inbox& inbox) = 0;
  // Makes a poll() in progress return now. Any thread.
  virtual void interrupt() = 0;
  // Receiving into the engine's memory (van_v2.h, lend and unlend): true
  // when the van took the lend; false when it cannot lend (then every
  // message stays in its memory). After unlend() returns, the van writes
  // nothing to the buffer and no message handed out later points into it.
  virtual bool lend(uint64_t slot, size_t segment, void* buf, size_t len) = 0;
  virtual void unlend(uint64_t slot) = 0;
};

// Loads the van the configuration names and creates an instance.
std::unique_ptr<Van> open_van(const JobConfig& config);

}  // namespace caravan
