// The control channel: framed messages (wire header + body) over TCP
// between the scheduler and every node. One thread per hub blocks in poll();
// handlers run on that thread; send() may be called from any thread.
//
// Nothing unchecked reaches a handler: every message is parsed by
// parse_control_message first. A connection that sends something malformed,
// or (when accepted by listen()) stops in the middle of a message, sends
// nothing at all, or is not admitted for the stall limit, is logged with its
// address and dropped, and the close handler is told why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/control/control_message.h"
#include "engine/control/frame_reader.h"
#include "engine/wire/header.h"

namespace caravan {

class ControlHub {
 public:
  using MessageHandler = std::function<void(int conn, ControlMessage&& msg)>;
  using CloseHandler = std::function<void(int conn, const std::string& why)>;

  // Bodies larger than this are refused and their connection dropped.
  static constexpr uint64_t kMaxBody = 16ull << 20;

  ControlHub(ControlReceiver receiver, MessageHandler on_message, CloseHandler on_close);
  ~ControlHub();
  ControlHub(const ControlHub&) = delete;
  ControlHub& operator=(const ControlHub&) = delete;

  // Accepts connections on host:port; returns the bound port. Before start().
  int listen(const std::string& host, int port);
  // Accepts connections on a socket already listening (handed down by
  // caravan-launch); the hub owns it from now. Before start().
  void listen_on(int fd) { listen_fd_ = fd; }
  // An accepted connection must complete its first message within this many
  // seconds of connecting, and each later one within this many seconds of
  // its first byte; 0 (the default) waits for ever. Before start().
  void set_stall_limit(int seconds) { stall_limit_s_ = seconds; }
  // Adopts a connected socket; returns its connection id.
  int adopt(int fd);
  // The owner accepts an accepted connection as a peer (the scheduler: it
  // passed the CARAVAN_JOB_TOKEN challenge, or sent its first message when
  // there is no token). One that is not admitted within the stall limit of
  // connecting is dropped, whatever it sends meanwhile.
  void admit(int conn);
  void start();
  // Stops the thread and closes every socket; no handler runs afterwards.
  void stop();
  // Sends one message; false when the connection is closed or broke.
  bool send(int conn, wire::Header head, const std::vector<uint8_t>& body);
  // Closes a connection without calling the close handler; safe from a
  // message handler, after which no further message of it is delivered.
  void close(int conn);
  // Like close(), but what was sent still reaches the peer: stops sending,
  // then reads and discards until the peer hangs up (or the stall limit
  // passes). A plain close() with unread input would reset the connection
  // and could destroy the last message (the ABORT that says why) in flight.
  void hang_up(int conn);
  std::string peer(int conn) const;
  size_t connection_count() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd = -1;
    std::string peer;
    FrameReader in{kMaxBody};
    std::mutex write_mu;
    bool accepted = false;    // came through listen(): subject to the stall limit
    bool admitted = false;    // guarded by the hub's mu_
    bool closed = false;      // close() was called; guarded by the hub's mu_
    bool hanging_up = false;  // hang_up() was called; guarded by the hub's mu_
    uint64_t messages = 0;    // complete messages received
    Clock::time_point connected;
    Clock::time_point since;  // connected, first byte of the pending message, or hang_up()
  };
  void loop();
  void accept_one();
  // Reads what is available; false (with *why, and *bad for a peer at
  // fault) when the connection must be dropped.
  bool read_from(int id, Conn& c, std::string* why, bool* bad);
  // Removes, closes, logs and reports a connection the hub gives up on.
  void drop(int id, Conn& c, const std::string& why, bool bad);
  // Drops accepted connections past the stall limit; returns the poll
  // timeout in ms until the next one would be (-1: none).
  int expire_stalled();
  void wake();

  ControlReceiver receiver_;
  MessageHandler on_message_;
  CloseHandler on_close_;
  int stall_limit_s_ = 0;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::map<int, std::shared_ptr<Conn>> conns_;
  int next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace caravan
