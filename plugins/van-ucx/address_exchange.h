// How ucx van instances learn each other's UCX worker addresses: over plain
// TCP, beside UCX. A node listens on the host and port the engine gives
// listen() (the address it advertises is "ucx://HOST:PORT") and writes its
// worker address to whoever connects; a node that connect()s to a peer
// fetches the peer's and makes its UCX endpoint from it.
//
// Why not UCX's own sockaddr connection manager (ucp_listener): with
// UCX 1.13, an accepted endpoint whose client went away during wire-up
// failed inside ucp_worker_progress on an assertion about UCX's async
// context, ending the process; endpoints made from a worker address never
// take that path.
//
// All socket work is done by one thread of the exchange's own, which calls
// `fetched` (never holding a lock of its own) when a fetch ends.
#ifndef CARAVAN_VAN_UCX_ADDRESS_EXCHANGE_H
#define CARAVAN_VAN_UCX_ADDRESS_EXCHANGE_H

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::van_ucx {

class AddressExchange {
 public:
  // ok: `text` is the peer's worker address; otherwise why the fetch failed.
  using Fetched = std::function<void(uint64_t token, bool ok, const std::string& text)>;

  AddressExchange(const plugin::Host& host, std::string worker_address, Fetched fetched);
  ~AddressExchange();  // stop(), then closes the sockets
  // Stops the thread: `fetched` is not called once this returns, and fetches
  // not ended are dropped unreported.
  void stop();
  AddressExchange(const AddressExchange&) = delete;
  AddressExchange& operator=(const AddressExchange&) = delete;

  // Starts answering on `host`:`port` (0: any free port); the port bound.
  // Throws INVALID_ARGUMENT naming them when they cannot be bound.
  int listen(const std::string& host, int port, const std::string& where);

  // Fetches the address of the peer listening at `target`, starting after
  // `delay_ms`; `fetched` is called with `token` once, unless cancelled.
  void fetch(uint64_t token, const sockaddr_storage& target, socklen_t target_len, int delay_ms);
  void cancel(uint64_t token);

  // How many peers this node has handed its address to: each makes an
  // endpoint from it, whose first message (a HELLO) follows.
  uint64_t answered() const { return answered_; }

  // The address handed out from now on (UCX started again: listen()).
  void set_worker_address(std::string address);

 private:
  struct Fetch {
    uint64_t token = 0;
    sockaddr_storage target{};
    socklen_t target_len = 0;
    std::chrono::steady_clock::time_point start{};
    std::chrono::steady_clock::time_point deadline{};
    int fd = -1;
    bool connected = false;
    std::string got;
  };

  void run();
  void begin(Fetch& f);  // the connect
  // Reads what came (`ready`: epoll reported the socket); true when the
  // fetch is over, `why` empty when it succeeded.
  bool step(Fetch& f, bool ready, std::string* why);
  void answer(int listen_fd);  // accepted peers get our address
  void end(uint64_t token, bool ok, const std::string& text);
  void wake();

  const plugin::Host& host_;
  std::string worker_address_;  // under mu_
  Fetched fetched_;
  int epoll_ = -1;
  int wake_fd_ = -1;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> answered_{0};

  std::mutex mu_;
  std::unordered_map<uint64_t, Fetch> fetches_;  // by token
  std::thread thread_;
};

}  // namespace caravan::van_ucx

#endif  // CARAVAN_VAN_UCX_ADDRESS_EXCHANGE_H
