// An ABI 1 van (caravan/plugin/van_v1.h): the SDK's example van as it was
// before it moved to ABI 2, the ABI 1 face on the example's own transport
// (api/examples/van-skeleton/tcp_links.h). Nothing else in the tree speaks
// ABI 1, and the engine still loads such vans through its lift
// (engine/van/van_v1_lift.cc): VanConformance.v1skeleton and
// VanAbi.TableOfVersion10LoadsAndRuns run over it. Set beside
// skeleton_van.h, it shows what moving a van from ABI 1 to 2 changes: send()
// calls done() itself, from inside send(), and recv() returns one message.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v1.h"
#include "tcp_links.h"

namespace skeleton {

class V1Van {
 public:
  explicit V1Van(const caravan_host_v1* host);
  ~V1Van();
  V1Van(const V1Van&) = delete;
  V1Van& operator=(const V1Van&) = delete;

  const caravan::plugin::Host& host() const { return host_; }
  void properties(caravan_van_properties_v1* out) const;
  void listen(const char* host, int port, char* addr_out, size_t addr_cap) {
    links_.listen(host, port, addr_out, addr_cap);
  }
  void connect(uint64_t peer, const char* address) { links_.connect(peer, address); }
  // Accepted sends are written and done already: none is left to drop.
  void disconnect(uint64_t peer) { links_.disconnect(peer); }
  void send(uint64_t peer, const caravan_segment_v1* segments, size_t num_segments,
            caravan_send_done_fn done, void* cookie);
  caravan_status recv(int timeout_ms, caravan_van_message_v1* out);
  void release(caravan_van_message_v1* message);

 private:
  // Counts a send() or recv() inside, which finalize waits for; refused
  // with CLOSED once finalize began.
  void enter();
  void leave();

  caravan::plugin::Host host_;
  const size_t max_message_bytes_;
  std::mutex mu_;  // guards everything below up to links_
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Frame>> inbox_;
  std::set<Frame*> held_;
  bool closing_ = false;
  int calls_ = 0;

  // Last, so it goes first: its I/O thread hands frames to the members above.
  TcpLinks links_;
};

}  // namespace skeleton
