// A stranger that speaks ZMTP to a van on 127.0.0.1 (through libzmq, as any
// zmq program could): a DEALER socket whose messages go out as given, for
// tests that send a van what it must refuse. Needs libzmq.
#pragma once

#include <zmq.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

namespace caravan::test {

class ZmqStranger {
 public:
  // Closing waits at most `linger_s` for the bytes still queued to go.
  ZmqStranger(int port, double linger_s)
      : ctx_(zmq_ctx_new()), socket_(zmq_socket(ctx_, ZMQ_DEALER)) {
    int linger_ms = static_cast<int>(linger_s * 1000);
    zmq_setsockopt(socket_, ZMQ_LINGER, &linger_ms, sizeof linger_ms);
    std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
    if (zmq_connect(socket_, endpoint.c_str()) != 0) error_ = zmq_strerror(errno);
  }
  ~ZmqStranger() {
    zmq_close(socket_);
    zmq_ctx_term(ctx_);
  }
  ZmqStranger(const ZmqStranger&) = delete;
  ZmqStranger& operator=(const ZmqStranger&) = delete;

  // "" when the connect call went through, else libzmq's reason.
  const std::string& error() const { return error_; }

  // One message of these segments.
  void send(const std::vector<std::vector<uint8_t>>& segments) {
    for (size_t i = 0; i < segments.size(); ++i)
      zmq_send(socket_, segments[i].data(), segments[i].size(),
               i + 1 < segments.size() ? ZMQ_SNDMORE : 0);
  }

 private:
  void* ctx_;
  void* socket_;
  std::string error_;
};

}  // namespace caravan::test
