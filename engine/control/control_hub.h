// The control channel: framed messages (wire header + body) over TCP
// between the scheduler and every node. One thread per hub blocks in poll();
// handlers run on that thread; send() may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/wire/header.h"

namespace caravan {

class ControlHub {
 public:
  using MessageHandler =
      std::function<void(int conn, const wire::Header& head, std::vector<uint8_t>&& body)>;
  using CloseHandler = std::function<void(int conn, const std::string& why)>;

  // Bodies larger than this are refused and their connection dropped.
  static constexpr uint64_t kMaxBody = 16ull << 20;

  ControlHub(MessageHandler on_message, CloseHandler on_close);
  ~ControlHub();
  ControlHub(const ControlHub&) = delete;
  ControlHub& operator=(const ControlHub&) = delete;

  // Accepts connections on host:port; returns the bound port. Before start().
  int listen(const std::string& host, int port);
  // Adopts a connected socket; returns its connection id.
  int adopt(int fd);
  void start();
  // Stops the thread and closes every socket; no handler runs afterwards.
  void stop();
  // Sends one message; false when the connection is closed or broke.
  bool send(int conn, wire::Header head, const std::vector<uint8_t>& body);
  // Closes a connection without calling the close handler.
  void close(int conn);
  std::string peer(int conn) const;
  size_t connection_count() const;

 private:
  struct Conn {
    int fd = -1;
    std::string peer;
    std::vector<uint8_t> in;
    std::mutex write_mu;
  };
  void loop();
  void accept_one();
  // Reads what is available; false when the connection must be dropped.
  bool read_from(int id, Conn& c, std::string* why);
  void wake();

  MessageHandler on_message_;
  CloseHandler on_close_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::map<int, std::shared_ptr<Conn>> conns_;
  int next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace caravan
