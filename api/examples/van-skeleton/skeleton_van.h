// A minimal third-party van of ABI 2.1 (caravan/plugin/van_v2.h) over plain
// TCP sockets, written only against the Caravan SDK: what every van must do
// and little more. This class is the ABI's side; tcp_links.h moves the
// bytes. Deliberately simple:
//  - send() writes the whole frame on the caller's thread, then queues the
//    send's SENT event, which the engine gets from a later poll(), never
//    from send() itself. The write waits only for the kernels and the wire,
//    never for the peer's application: the receiver's I/O thread always
//    drains its sockets into memory. A faster van hands what the kernel does
//    not take at once to a thread of its own (plugins/van-tcp).
//  - The I/O thread's whole frames wait in an inbox; poll() hands them out
//    as RECEIVED events.
//  - No lend and unlend (van_v2.h minor 1, optional): every message stays in
//    this van's memory until release(), and the engine copies answers out of
//    it. A van that can read a message wherever it likes should add them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "caravan/plugin/van_v2_cxx.hpp"
#include "tcp_links.h"

namespace skeleton {

// Its one parameter, CARAVAN_VAN_SKELETON_MAX_MESSAGE_BYTES: declared once,
// so the descriptor's list and the value read cannot disagree.
inline constexpr caravan::plugin::Param kMaxMessageBytes{"MAX_MESSAGE_BYTES", "4294967296",
                                                         "largest message accepted, in bytes"};
inline constexpr caravan_param_info kParams[] = {kMaxMessageBytes.info};

class SkeletonVan {
  // Constructor (init), destructor (finalize) and the ABI's operations,
  // which van_v2_cxx.hpp turns into the C table.
  CARAVAN_VAN_V2_CLASS(SkeletonVan)

 private:
  class Call;
  void arrived(std::unique_ptr<Frame> frame);

  caravan::plugin::Host host_;
  const size_t max_message_bytes_;

  std::mutex mu_;                   // guards everything below up to links_
  std::condition_variable events_;  // an event is queued, interrupt(), or finalize
  std::condition_variable idle_;    // no send() or poll() is inside any more
  std::deque<std::pair<uint64_t, caravan_status>> sent_;  // SENT events not yet polled
  std::deque<std::unique_ptr<Frame>> inbox_;              // RECEIVED events not yet polled
  std::set<Frame*> held_;                                 // handed out, not yet released
  bool interrupted_ = false;
  bool closing_ = false;
  int calls_ = 0;  // send() and poll() calls inside, which finalize waits for

  // Last, so it goes first: its I/O thread hands frames to the members above.
  TcpLinks links_;
};

}  // namespace skeleton
