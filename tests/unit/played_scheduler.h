// A scheduler's listening end played by a unit test: a ControlHub on
// loopback whose messages go to the test's handler, which answers as the
// test needs (orders a real scheduler makes rare, held on purpose).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "engine/control/control_hub.h"

namespace caravan {

class PlayedScheduler {
 public:
  // Listens on `port` (0: any free one).
  explicit PlayedScheduler(std::function<void(int conn, ControlMessage&&)> on_message, int port = 0)
      : hub_(ControlReceiver::kScheduler, std::move(on_message), [](int, const std::string&) {}) {
    port_ = hub_.listen("127.0.0.1", port);
    hub_.start();
  }
  ~PlayedScheduler() { hub_.stop(); }
  int port() const { return port_; }
  ControlHub& hub() { return hub_; }

 private:
  ControlHub hub_;
  int port_ = 0;
};

}  // namespace caravan
