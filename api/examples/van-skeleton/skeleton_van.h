// A minimal third-party van over plain TCP sockets, written only against
// the Caravan SDK. Deliberately simple: send() writes the whole message
// before it returns (the receiver's I/O thread always drains its sockets
// into memory, so that never waits on the application), and one I/O thread
// per instance accepts connections and reads frames.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v1.h"

namespace skeleton {

// One message on the wire: this header, then the segments back to back.
struct FrameHeader {
  uint32_t magic;
  uint32_t num_segments;
  uint64_t lengths[CARAVAN_VAN_MAX_SEGMENTS_V1];
};
constexpr uint32_t kFrameMagic = 0x314b5653;  // "SVK1"

// A received message and the memory its segments point into.
struct Received {
  std::unique_ptr<char[]> data;
  std::string peer;
  size_t num_segments = 0;
  uint64_t lengths[CARAVAN_VAN_MAX_SEGMENTS_V1] = {};
};

// The outgoing path to one peer; its mutex keeps each frame whole.
struct Link {
  std::mutex mu;
  int fd = -1;
  std::string address;
};

class SkeletonVan {
 public:
  explicit SkeletonVan(const caravan_host_v1* host);
  ~SkeletonVan();

  const caravan::plugin::Host& host() const { return host_; }
  void properties(caravan_van_properties_v1* out) const;
  void listen(const char* host, int port, char* addr_out, size_t addr_cap);
  void connect(uint64_t peer, const char* address);
  void disconnect(uint64_t peer);
  caravan_status send(uint64_t peer, const caravan_segment_v1* segments, size_t num_segments,
                      caravan_send_done_fn done, void* cookie);
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  void release(caravan_van_message_v1* message);

 private:
  void io_loop();
  bool read_frame(int fd, const std::string& peer);

  caravan::plugin::Host host_;
  size_t max_message_bytes_;
  int wake_[2] = {-1, -1};
  std::thread io_;

  std::mutex mu_;  // guards everything below up to links_mu_
  std::condition_variable cv_;
  int listen_fd_ = -1;
  std::map<int, std::string> conns_;  // accepted fd -> peer text
  std::deque<std::unique_ptr<Received>> inbox_;
  std::set<Received*> held_;
  bool closing_ = false;
  int calls_in_flight_ = 0;  // send() and recv() finalize waits for

  std::mutex links_mu_;
  std::map<uint64_t, std::shared_ptr<Link>> links_;
};

}  // namespace skeleton
