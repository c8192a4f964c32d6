// The transport interface inside the engine. Every van, the in-tree ones
// included, is a plugin behind the C ABI; PluginVan adapts one to this class.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "caravan/plugin/van_v1.h"

namespace caravan {

struct JobConfig;

// Called once when a sent message's memory may be reused.
using SendDone = std::function<void(caravan_status)>;

class Van {
 public:
  // A received message; the van's memory stays valid until it is destroyed.
  class Received {
   public:
    virtual ~Received() = default;
    size_t num_segments = 0;
    caravan_recv_segment_v1 segments[CARAVAN_VAN_MAX_SEGMENTS_V1] = {};
    std::string peer;
  };

  virtual ~Van() = default;
  virtual const std::string& name() const = 0;
  virtual const caravan_van_properties_v1& properties() const = 0;
  // Binds and returns the address peers connect to. Throws on failure.
  virtual std::string listen(const std::string& host, int port) = 0;
  virtual void connect(uint64_t peer, const std::string& address) = 0;
  virtual void disconnect(uint64_t peer) = 0;
  // Throws on a synchronous failure (then `done` is not called). `slot`:
  // nonzero for messages that recur (van_v1.h, send_slot), else 0.
  virtual void send(uint64_t peer, uint64_t slot, const caravan_segment_v1* segments, size_t num_segments,
                    SendDone done) = 0;
  // The next message, or nullptr when none came within timeout_ms.
  virtual std::unique_ptr<Received> recv(int timeout_ms) = 0;
};

// Loads the van the configuration names and creates an instance.
std::unique_ptr<Van> open_van(const JobConfig& config);

}  // namespace caravan
