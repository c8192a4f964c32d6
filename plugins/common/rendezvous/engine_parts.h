// The state the rendezvous engine keeps, shared by its files: engine.cc
// (life cycle, posting and completions), engine_send.cc (the sending side)
// and engine_receive.cc (the receiving side). Private to the library.
#ifndef CARAVAN_RENDEZVOUS_ENGINE_PARTS_H
#define CARAVAN_RENDEZVOUS_ENGINE_PARTS_H

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rendezvous/engine.h"

namespace caravan::rendezvous {

enum class OpKind { kSend, kRecv, kRead, kWrite };

struct Op {
  alignas(16) unsigned char scratch[64];  // the transport's, while posted
  OpKind kind = OpKind::kSend;
  Buffer* buf = nullptr;
  size_t len = 0;
  uint64_t addr = 0;
  InMsg* msg = nullptr;  // kRead
  size_t offset = 0;      // kRead: where in the message the bytes go
  uint64_t raddr = 0;
  uint64_t key = 0;
  uint64_t xfer = 0;      // kSend of a request to send: the transfer it announces
  const char* local = nullptr;  // kWrite: the bytes written, registered under desc
  void* desc = nullptr;
  Put* put = nullptr;           // kWrite: the message it belongs to
};

// A run of a message's bytes that one remote read fetches.
struct Piece {
  size_t offset = 0;  // in the message
  uint64_t raddr = 0;
  uint64_t key = 0;
  size_t len = 0;
};

struct Source {
  uint64_t stream = 0;
  uint64_t addr = 0;
  std::string peer;
  uint64_t next_seq = 0;
  std::map<uint64_t, InMsg*> pending;  // arrived, by seq, not yet delivered
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

// The sender's side: where the next message of a slot may be written.
struct RemoteGrant {
  uint64_t id = 0;
  uint64_t raddr = 0;
  uint64_t key = 0;
  uint64_t capacity = 0;
};

// A request to send, from its announcement until the receiver's notice
// says the remote segments were read.
struct Transfer {
  uint64_t stream = 0;
  Buffer* staged = nullptr;         // the remote segments copied, or
  std::vector<Registration> regs;   // the caller's own, registered for this transfer
  size_t charged = 0;               // bytes of regs counted against the send pool
  caravan_send_done_fn done = nullptr;  // with regs: runs once the memory is free
  void* cookie = nullptr;
  // Set when its stream was disconnected: past this the memory is withdrawn.
  bool orphan = false;
  std::chrono::steady_clock::time_point withdraw_at{};
};

// What a request to send needs before it is announced: its remote segments
// copied or registered, its frame with the inline segments in place.
struct Prepared {
  Buffer* frame = nullptr;
  size_t inline_bytes = 0;
  uint64_t inline_mask = 0;
  uint64_t raddrs[kMaxSegments] = {};
  uint64_t keys[kMaxSegments] = {};
  Buffer* staged = nullptr;
  std::vector<Registration> regs;
  size_t charged = 0;
};

struct Stream {
  uint64_t id = 0;
  uint64_t addr = 0;
  uint64_t next_seq = 0;
  std::unordered_map<uint64_t, RemoteGrant> grants;  // by slot, each usable once
};

struct Job {
  enum Type { kFrame, kRts, kChunked, kPut } type = kFrame;
  uint64_t stream = 0;
  uint64_t to = 0;
  Op* op = nullptr;  // a frame built and not yet posted
  uint64_t seq = 0;
  std::vector<caravan_segment_v1> segs;
  uint64_t total = 0;
  size_t offset = 0;
  caravan_send_done_fn done = nullptr;  // cleared once run or handed to a Transfer
  void* cookie = nullptr;
  uint64_t xfer = 0;  // kRts, once announced in op
  uint64_t slot = 0;
  RemoteGrant grant;      // kPut: the buffer it is written into
  uint64_t returned = 0;  // kRts: a grant too small for it, handed back unused
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

#endif  // CARAVAN_RENDEZVOUS_ENGINE_PARTS_H
