// What the sending side keeps per stream and per message. Private to the
// library.
#ifndef CARAVAN_RENDEZVOUS_SEND_JOB_H
#define CARAVAN_RENDEZVOUS_SEND_JOB_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "rendezvous/frame.h"
#include "rendezvous/grant_table.h"
#include "rendezvous/op.h"
#include "rendezvous/prepared.h"
#include "rendezvous/send_completions.h"

namespace caravan::rendezvous {

// This side's stream to one connected peer; it numbers its messages.
struct Stream {
  uint64_t id = 0;
  uint64_t addr = 0;
  uint64_t next_seq = 0;
};

// A message queued on its stream, in send order.
struct Job {
  enum Type { kFrame, kRts, kChunked, kPut } type = kFrame;
  uint64_t stream = 0;
  uint64_t to = 0;
  Op* op = nullptr;  // a frame built and not yet posted
  uint64_t seq = 0;
  std::vector<caravan_segment_v2> segs;
  uint64_t total = 0;
  size_t offset = 0;
  SendTicket ticket;  // cleared once reported or handed to a transfer or put
  uint64_t xfer = 0;  // kRts, once announced in op
  uint64_t slot = 0;
  RemoteGrant grant;      // kPut: the buffer it is written into
  uint64_t returned = 0;  // kRts: a grant too small for it, handed back unused

  // A header of this kind for the message (segment lengths, stream, seq).
  Frame frame(Kind kind) const;
  // Copies bytes [from, from+len) of the concatenated segments to dst.
  void copy(size_t from, size_t len, char* dst) const;
};

// A message being written into a lent buffer: its memory stays registered
// until the writes complete; then its notice goes, or, if a write failed,
// it goes again as a request to send.
struct Put {
  Job job;
  Prepared p;
  size_t writes_left = 0;
  bool failed = false;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_SEND_JOB_H
