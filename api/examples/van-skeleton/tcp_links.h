// The skeleton van's transport, which knows nothing of the van ABI's calls:
// TCP streams of frames (a header, then the segments back to back), one
// outgoing connection per peer, and one I/O thread that accepts connections
// and reads whole frames into memory. skeleton_van.h puts the ABI 2 face on
// it; tests/unit/plugins/van_v1_skeleton puts the ABI 1 face on the same.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"

namespace skeleton {

constexpr size_t kMaxSegments = CARAVAN_VAN_MAX_SEGMENTS_V2;

// One message on the wire: this header, then the segments back to back.
struct FrameHeader {
  uint32_t magic;
  uint32_t num_segments;
  uint64_t lengths[kMaxSegments];
};
constexpr uint32_t kFrameMagic = 0x314b5653;  // "SVK1"

// A frame that arrived whole, and the memory its segments lie in, one after
// the other.
struct Frame {
  std::unique_ptr<char[]> data;
  std::string peer;  // the sender's address, as text
  size_t num_segments = 0;
  uint64_t lengths[kMaxSegments] = {};

  char* segment(size_t i) const {
    char* p = data.get();
    for (size_t k = 0; k < i; ++k) p += lengths[k];
    return p;
  }
};

// The outgoing connection to one peer; its mutex keeps each frame whole when
// several threads write at once.
struct Link {
  std::mutex mu;
  int fd = -1;
  std::string address;
  std::string broken;               // why an earlier write failed; the stream is unusable
  std::atomic<bool> closed{false};  // disconnected, or the transport is closing
};

class TcpLinks {
 public:
  // `on_frame` runs on the I/O thread for each frame that arrives whole.
  TcpLinks(const caravan::plugin::Host& host, size_t max_message_bytes,
           std::function<void(std::unique_ptr<Frame>)> on_frame);
  ~TcpLinks();  // close(), then every socket is closed
  TcpLinks(const TcpLinks&) = delete;
  TcpLinks& operator=(const TcpLinks&) = delete;

  // Binds and starts accepting; writes the address peers pass to connect()
  // into addr_out (capacity addr_cap), as both ABIs' listen() do.
  void listen(const char* host, int port, char* addr_out, size_t addr_cap);
  void connect(uint64_t peer, const char* address);
  void disconnect(uint64_t peer);
  // Writes one frame to `peer`, wholly, before it returns. Throws
  // plugin::Error: INVALID_ARGUMENT (unknown peer, segment count, size),
  // CLOSED (disconnected or closing, also while writing), IO.
  void write(uint64_t peer, const caravan_segment_v2* segments, size_t num_segments);
  // The first step of finalize: every write() in progress fails, later ones
  // are refused, and the I/O thread has stopped (on_frame runs no more) when
  // it returns.
  void close();

 private:
  std::shared_ptr<Link> link_of(uint64_t peer);
  void io_loop();
  bool read_frame(int fd, const std::string& peer);
  void wake_io();

  const caravan::plugin::Host host_;
  const size_t max_message_bytes_;
  const std::function<void(std::unique_ptr<Frame>)> on_frame_;
  int wake_[2] = {-1, -1};  // a pipe that wakes the I/O thread's poll(2)
  std::thread io_;

  std::mutex mu_;  // guards the three below
  int listen_fd_ = -1;
  std::map<int, std::string> conns_;  // accepted fd -> peer text
  bool closing_ = false;

  std::mutex links_mu_;
  std::map<uint64_t, std::shared_ptr<Link>> links_;
};

}  // namespace skeleton
