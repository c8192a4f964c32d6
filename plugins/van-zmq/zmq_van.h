// The ZeroMQ van instance (ps-lite style): one ROUTER that every peer's
// DEALER connects to. Methods throw plugin::Error; the C table in
// plugin_entry.cc turns that into status codes.
#ifndef CARAVAN_VAN_ZMQ_ZMQ_VAN_H
#define CARAVAN_VAN_ZMQ_ZMQ_VAN_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v1.h"
#include "messages.h"

namespace caravan::van_zmq {

// The path to one peer. zmq sockets are not thread-safe, so every use of
// `sock` happens under `mu`; that also keeps each multipart message whole.
struct Link {
  std::mutex mu;
  void* sock = nullptr;  // null once closed
  std::string address;
  std::shared_ptr<std::atomic<bool>> dropped = std::make_shared<std::atomic<bool>>(false);
};

class ZmqVan {
 public:
  explicit ZmqVan(const caravan_host_v1* host);
  ~ZmqVan();
  ZmqVan(const ZmqVan&) = delete;
  ZmqVan& operator=(const ZmqVan&) = delete;

  const plugin::Host& host() const { return host_; }

  void properties(caravan_van_properties_v1* out) const;
  void listen(const char* host, int port, char* addr_out, size_t addr_cap);
  void connect(uint64_t peer, const char* address);
  void disconnect(uint64_t peer);
  caravan_status send(uint64_t peer, const caravan_segment_v1* segments, size_t num_segments,
                      caravan_send_done_fn done, void* cookie);
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  void release(caravan_van_message_v1* message);
  // Closes everything; see the comment at its definition for done().
  void shutdown() noexcept;

 private:
  enum class Read { kMessage, kDropped, kNone, kClosed };
  Read read_message(void* router, caravan_van_message_v1* out);
  static void close_link(Link& link) noexcept;

  plugin::Host host_;
  void* ctx_ = nullptr;
  int sndhwm_ = 0;
  int rcvhwm_ = 0;
  int linger_ms_ = 500;
  size_t max_message_bytes_ = 0;  // 0: unlimited

  // router_ is published once by listen(); after that only recv() uses it.
  std::mutex mu_;
  std::condition_variable router_ready_;
  void* router_ = nullptr;
  bool listened_ = false;
  std::atomic<bool> closing_{false};
  std::mutex recv_mu_;  // held by recv() so shutdown() can take the ROUTER

  std::shared_mutex links_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Link>> links_;

  // Received messages not yet released, freed by shutdown().
  std::mutex held_mu_;
  std::unordered_set<RecvRecord*> held_;
};

}  // namespace caravan::van_zmq

#endif  // CARAVAN_VAN_ZMQ_ZMQ_VAN_H
