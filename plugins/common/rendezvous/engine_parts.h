// The state the rendezvous engine keeps, shared by its files: engine.cc
// (life cycle, posting and completions), engine_send.cc (the sending side)
// and engine_receive.cc (the receiving side). Private to the library.
#ifndef CARAVAN_RENDEZVOUS_ENGINE_PARTS_H
#define CARAVAN_RENDEZVOUS_ENGINE_PARTS_H

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rendezvous/engine.h"

namespace caravan::rendezvous {

enum class OpKind { kSend, kRecv, kRead };

struct Op {
  alignas(16) unsigned char scratch[64];  // the transport's, while posted
  OpKind kind = OpKind::kSend;
  Buffer* buf = nullptr;
  size_t len = 0;
  uint64_t addr = 0;
  InMsg* msg = nullptr;  // kRead
  size_t offset = 0;
  uint64_t raddr = 0;
  uint64_t key = 0;
};

struct Source {
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
  uint64_t raddr = 0, key = 0, xfer = 0;
};

struct Stream {
  uint64_t id = 0;
  uint64_t addr = 0;
  uint64_t next_seq = 0;
};

struct Job {
  enum Type { kFrame, kStage, kChunked } type = kFrame;
  uint64_t stream = 0;
  uint64_t to = 0;
  Op* op = nullptr;  // a frame built and not yet posted
  uint64_t seq = 0;
  std::vector<caravan_segment_v1> segs;
  uint64_t total = 0;
  size_t offset = 0;
  caravan_send_done_fn done = nullptr;
  void* cookie = nullptr;
};

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_ENGINE_PARTS_H
