// The ZeroMQ van instance (ps-lite style): one ROUTER that every peer's
// DEALER connects to. Methods throw plugin::Error; the C table in
// plugin_entry.cc turns that into status codes.
#ifndef CARAVAN_VAN_ZMQ_ZMQ_VAN_H
#define CARAVAN_VAN_ZMQ_ZMQ_VAN_H

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "events/held_messages.h"
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
  CARAVAN_VAN_V2_CLASS(ZmqVan)
  // Closes everything; see the comment at its definition for sends in flight.
  void shutdown() noexcept;

 private:
  enum class Read { kMessage, kDropped, kNone, kClosed };
  Read read_message(void* router, caravan_van_message_v2* out);
  static void close_link(Link& link) noexcept;

  plugin::Host host_;
  void* ctx_ = nullptr;
  int sndhwm_ = 0;
  long long sndbuf_ = -1;  // SNDBUF: -1 (auto) by peer, 0 the kernel's autotuning, else bytes
  std::string own_host_;   // the host listen() advertised (under mu_)
  int rcvhwm_ = 0;
  int linger_ms_ = 500;
  size_t max_message_bytes_ = 0;  // 0: unlimited

  // zmq's I/O threads report finished sends into it until zmq_ctx_term()
  // returns in shutdown(), which the destructor's body runs.
  Completions completions_;
  std::atomic<bool> interrupted_{false};

  // router_ is published once by listen(); after that only poll() uses it.
  std::mutex mu_;
  void* router_ = nullptr;
  bool listened_ = false;
  std::atomic<bool> closing_{false};
  std::mutex poll_mu_;  // held by poll() so shutdown() can take the ROUTER

  std::shared_mutex links_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Link>> links_;

  // Received messages not yet released, freed by shutdown().
  plugin::HeldMessages<RecvRecord> held_;
};

}  // namespace caravan::van_zmq

#endif  // CARAVAN_VAN_ZMQ_ZMQ_VAN_H
