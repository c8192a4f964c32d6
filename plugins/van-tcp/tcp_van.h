// The tcp van: plain non-blocking TCP sockets and epoll. A send is written
// by the thread that calls send() when its connection is idle, so a small
// message reaches the kernel without waking anyone; every read is done by
// the thread in poll(). What the kernel does not take at once is written by
// the van's one writer thread, which also finishes connections (and tries
// again those not up yet), so large messages go out while poll() reads.
// Each node listens once; a peer it sends to gets a connection of its own
// (two per pair of nodes that talk both ways, as with van-zmq's DEALER and
// ROUTER).
#ifndef CARAVAN_VAN_TCP_TCP_VAN_H
#define CARAVAN_VAN_TCP_TCP_VAN_H

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "events/held_messages.h"
#include "events/sent_events.h"
#include "frame.h"
#include "inbound.h"
#include "lending.h"

namespace caravan::van_tcp {

// A message not yet wholly written: its own header and the caller's
// segments, from the first byte the kernel has not taken.
struct Outgoing {
  uint64_t send_id = 0;
  unsigned char head[kMaxHeaderBytes];
  iovec iov[1 + CARAVAN_VAN_MAX_SEGMENTS_V2];
  size_t first = 0;  // iov[first..count) are left
  size_t count = 0;
};

// The path to one peer. Every use of fd and queue is under mu, which also
// keeps each message's bytes together on the stream.
struct Link {
  std::mutex mu;
  int fd = -1;
  uint64_t peer = 0;
  uint64_t key = 0;  // its epoll key
  std::string address;
  bool connecting = true;  // not connected yet: a connect() in flight or a retry due
  bool ever_connected = false;
  bool closed = false;  // disconnected: never connected again
  sockaddr_storage target{};
  socklen_t target_len = 0;
  bool watched = false;  // epoll reports writability (the queue is not empty)
  std::string failed;    // why the connection broke; empty while it works
  std::deque<Outgoing> queue;
};

class TcpVan {
  CARAVAN_VAN_V2_CLASS(TcpVan)
  // Receiving into the engine's memory (van_v2.h minor 1; lending.h).
  void lend(uint64_t slot, size_t segment, void* buf, size_t len);
  void unlend(uint64_t slot);

 private:
  // Keys of the epoll set: the listener, the wake-up eventfd, then links
  // and inbound connections by number.
  static constexpr uint64_t kListenKey = 1;
  static constexpr uint64_t kWakeKey = 2;
  static constexpr uint64_t kFirstKey = 16;

  // Writes what the link's socket takes now, in order; each message written
  // whole, or failed, becomes a SENT event. Under link.mu.
  void flush(Link& link);
  // Fails every queued message of the link with `status`. Under link.mu.
  void fail_queue(Link& link, caravan_status status);
  void watch_writable(Link& link, bool on);
  // Starts a non-blocking connect() of the link (under link.mu); a failure
  // before the link was ever up schedules another try, as a peer may not
  // listen yet or its network come up later (the engine's start-up bounds
  // the wait with CARAVAN_CONNECT_TIMEOUT and names the peer).
  void start_connect(Link& link, const std::shared_ptr<Link>& self);
  void retry_later(Link& link, const std::shared_ptr<Link>& self, int err);
  // Tries again the connections whose time has come; the milliseconds
  // until the next one is due (-1: none).
  int retry_due();
  // The writer thread: links' writability and connection retries.
  void write_loop();
  void wake_writer();
  void sent(uint64_t send_id, caravan_status status);
  void wake();
  void accept_all();
  void read_inbound(uint64_t key);
  void link_ready(uint64_t key, uint32_t events);
  void close_inbound(std::unordered_map<uint64_t, std::unique_ptr<Inbound>>::iterator it);
  size_t take_received(caravan_van_event_v2* events, size_t capacity);
  void log_dropped(const std::string& peer);
  std::shared_ptr<Link> find_link(uint64_t key);
  std::string own_host();

  // Counts calls into the instance, so the destructor waits for them.
  class Call {
   public:
    explicit Call(TcpVan& van);
    ~Call();

   private:
    TcpVan& van_;
  };

  plugin::Host host_;
  size_t max_message_bytes_ = 0;  // 0: unlimited
  long long sndbuf_ = -1;  // SNDBUF: -1 (auto) by peer, 0 the kernel's autotuning, else bytes
  int epoll_ = -1;         // the poller's: the listener, inbound connections, wake_fd_
  int wake_fd_ = -1;
  int write_epoll_ = -1;  // the writer's: links, write_wake_fd_
  int write_wake_fd_ = -1;
  std::atomic<bool> stop_writer_{false};
  std::thread writer_;
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> polling_{false};  // a poller is (about to be) asleep in epoll_wait
  std::atomic<std::thread::id> poller_{};

  std::mutex mu_;  // listener, closing, calls
  std::condition_variable calls_cv_;
  int calls_ = 0;
  bool closing_ = false;
  int listen_fd_ = -1;
  bool listened_ = false;
  std::string own_host_;  // the host listen() advertised

  std::mutex poll_mu_;  // one poller at a time; inbound_ and received_ are its own

  std::shared_mutex links_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Link>> links_;      // by peer
  std::unordered_map<uint64_t, std::shared_ptr<Link>> link_keys_;  // by epoll key
  std::atomic<uint64_t> next_key_{kFirstKey};

  Lending lending_;  // before inbound_: connections being read refer to it
  std::unordered_map<uint64_t, std::unique_ptr<Inbound>> inbound_;  // by epoll key
  std::deque<std::unique_ptr<Received>> received_;

  // Links waiting for their next connect() (retry_due()).
  std::mutex retry_mu_;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::weak_ptr<Link>>> retry_;

  plugin::SentEvents sent_;

  // Received messages handed out and not yet released, freed at the end.
  plugin::HeldMessages<Received> held_;
};

}  // namespace caravan::van_tcp

#endif  // CARAVAN_VAN_TCP_TCP_VAN_H
