// A message on the receiving side, from its first frame until the
// application releases it, and the stream it comes in. Private to the
// library.
#ifndef CARAVAN_RENDEZVOUS_MESSAGE_H
#define CARAVAN_RENDEZVOUS_MESSAGE_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/frame.h"
#include "rendezvous/pool.h"

namespace caravan::rendezvous {

struct InMsg;

// A peer's stream, known from its hello.
struct Source {
  uint64_t stream = 0;
  uint64_t addr = 0;
  std::string peer;
  uint64_t next_seq = 0;
  std::map<uint64_t, InMsg*> pending;  // arrived, by seq, not yet delivered
};

// A run of a message's bytes that one remote read fetches.
struct Piece {
  size_t offset = 0;  // in the message
  uint64_t raddr = 0;
  uint64_t key = 0;
  size_t len = 0;
};

struct InMsg {
  Source* src = nullptr;
  uint64_t seq = 0;
  size_t nseg = 0;
  uint64_t lens[kMaxSegments] = {};
  uint64_t total = 0;
  std::unique_ptr<char[]> heap;
  Buffer* pooled = nullptr;
  char* data = nullptr;
  size_t filled = 0;  // chunks: bytes arrived
  size_t reads_left = 0;
  bool ready = false;
  bool failed = false;
  // A request to send: what the sender announced, until a buffer takes it.
  uint64_t xfer = 0;
  uint64_t inline_mask = 0;
  uint64_t raddrs[kMaxSegments] = {};
  uint64_t keys[kMaxSegments] = {};
  std::string inline_bytes;
  std::vector<Piece> pieces;  // read through the bounce buffer: all of them, in order
  size_t next_piece = 0;
  uint64_t slot = 0;   // the sender's slot hint: its buffer may be lent for the next one
  uint64_t grant = 0;  // written into this lent buffer
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_MESSAGE_H
