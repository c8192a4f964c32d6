// The ucx van's receiving side: active messages become whole messages in
// the order each stream sent them, in the van's memory or in memory the
// engine lent (van_v2.h, lend). Everything here runs under the van's UCX
// lock, as UCX calls its handlers from ucp_worker_progress, which the van
// only calls holding that lock; the one exception is Incoming's memory,
// which the engine holds (and frees by release()) without it.
//
// A small message, and each piece of a large one (wire.h), arrives whole in
// its handler and is copied out (into the lent memory when its slot has a
// lend of the right length). A large one
// arrives either as a rendezvous descriptor (the handler starts a receive
// straight into its segments' memory, and the message is whole when UCX
// completes that receive) or, over TCP, as eager fragments UCX has already
// put together in a buffer of its own: unless a lend takes it, the message's
// large segment is handed to the engine there, and the buffer goes back to
// UCX at release().
#ifndef CARAVAN_VAN_UCX_INBOX_H
#define CARAVAN_VAN_UCX_INBOX_H

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "caravan/plugin/plugin_cxx.hpp"
#include "caravan/plugin/van_v2.h"
#include "wire.h"

namespace caravan::van_ucx {

class Inbox;

// A lend (van_v2.h): the engine's buffer for segment `segment` of the next
// message on its slot with exactly `len` bytes there.
struct Lend {
  unsigned char* buf;
  size_t len;
  size_t segment;
  struct Incoming* taker = nullptr;  // the message being received into it
};

// One message being received or received: its segments in one allocation
// of the van's (each at a 64-byte boundary, as the engine sums in place
// with vector loads), but for a segment received into a lend or kept in
// UCX's buffer (any alignment: van_v2.h promises none).
struct Incoming {
  // Gives a kept buffer back to UCX: under the van's UCX lock, before the
  // worker goes.
  ~Incoming();
  uint64_t stream = 0;
  uint64_t seq = 0;
  uint64_t slot = 0;
  size_t num_segments = 0;
  uint64_t lens[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  unsigned char* where[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  unsigned char* memory = nullptr;  // the van's allocation
  unsigned char* moved = nullptr;   // where unlend moved the lent segment
  Lend* lend = nullptr;             // the lend it took, until handed out
  size_t lent_segment = 0;
  uint64_t missing = 0;     // bytes of its pieces still to come (wire.h)
  bool complete = false;    // every byte is in
  bool failed = false;      // the receive failed: dropped in its turn
  void* request = nullptr;  // the rendezvous receive in flight
  void* kept = nullptr;     // UCX's buffer a segment is in, of `worker`
  ucp_worker_h worker = nullptr;
  ucp_dt_iov_t iov[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  std::string peer;
  Inbox* inbox = nullptr;
};

class Inbox {
 public:
  Inbox(const plugin::Host& host, ucp_worker_h worker);
  ~Inbox();
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;

  // The active message handler's body.
  ucs_status_t arrived(const void* header, size_t header_length, void* data, size_t length,
                       const ucp_am_recv_param_t* param);

  // Moves up to `capacity` whole messages, oldest first, into `events`;
  // their number. Each message's lend ends here: its segment stays where
  // it is.
  size_t take(caravan_van_event_v2* events, size_t capacity,
              const std::function<void*(std::unique_ptr<Incoming>)>& hand_out);
  bool has_ready() const { return !ready_.empty(); }
  // HELLOs received: peers whose endpoint to this node is through wire-up.
  uint64_t hellos() const { return hellos_; }

  // Cancels the receives in flight and waits up to `wait` for UCX to end
  // them, and gives back the buffers of messages not handed out; then
  // handlers do nothing more (finalize).
  void shutdown(std::chrono::milliseconds wait);

  void lend(uint64_t slot, size_t segment, void* buf, size_t len);
  void unlend(uint64_t slot);

 private:
  struct Stream {
    std::string name = "unknown";
    uint64_t next_seq = 0;
    std::map<uint64_t, std::unique_ptr<Incoming>> waiting;
  };

  static void received(void* request, ucs_status_t status, size_t length, void* user_data);
  // Whether the header and data lengths agree with the message's (a
  // piece's with its offset); else says why.
  bool check(const WireHead& head, uint64_t offset, size_t header_length, size_t length,
             std::string* why) const;
  // A record for the stream's message, waiting for its bytes.
  Incoming* open(Stream& stream, const WireHead& head);
  // A piece of a message (wire.h): copied to its place; the message is
  // whole with its last bytes.
  ucs_status_t piece(const WireHead& head, uint64_t offset, const void* header, const void* data,
                     size_t length);
  // Allocates the van's memory of a message and takes the lend it matches;
  // leaves segment `keep` without memory unless the lend is for it.
  bool place(Incoming& in, size_t keep, std::string* why);
  // Whether the message's data (not its header) holds the segment (wire.h).
  static bool in_data(const WireHead& head, size_t segment);
  // Copies the segments the header carries to their places.
  static void copy_from_header(Incoming& in, const WireHead& head, const void* header);
  // The message's lend is over without it: back to its slot for the next.
  void unclaim(Incoming& in);
  // Hands the stream's messages that are next and whole to ready_.
  void advance(uint64_t stream_id);
  // Moves a taken lend's segment into the van's memory (unlend); waits for
  // a receive into it to finish first.
  void take_back(Lend& lend);

  const plugin::Host& host_;
  ucp_worker_h worker_;
  std::unordered_map<uint64_t, Stream> streams_;
  std::unordered_map<uint64_t, std::unique_ptr<Lend>> lends_;  // by slot
  std::deque<std::unique_ptr<Incoming>> ready_;
  bool closed_ = false;
  uint64_t hellos_ = 0;
};

}  // namespace caravan::van_ucx

#endif  // CARAVAN_VAN_UCX_INBOX_H
