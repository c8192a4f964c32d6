// An operation handed to the transport: a frame sent, a receive of the
// ring, a remote read or a remote write. The transport names it back by
// its address when it completes. Private to the library.
#ifndef CARAVAN_RENDEZVOUS_OP_H
#define CARAVAN_RENDEZVOUS_OP_H

#include <cstddef>
#include <cstdint>

#include "rendezvous/pool.h"

namespace caravan::rendezvous {

struct InMsg;
struct Put;

enum class OpKind { kSend, kRecv, kRead, kWrite };

struct Op {
  alignas(16) unsigned char scratch[64];  // the transport's, while posted
  OpKind kind = OpKind::kSend;
  Buffer* buf = nullptr;  // kSend, kRecv: the frame; kRead: the buffer read into
  size_t len = 0;
  uint64_t addr = 0;
  InMsg* msg = nullptr;  // kRead
  size_t offset = 0;     // kRead: where in the message the bytes go
  char* into = nullptr;  // kRead: where they land in buf
  uint64_t raddr = 0;
  uint64_t key = 0;
  uint64_t xfer = 0;            // kSend of a request to send: the transfer it announces
  const char* local = nullptr;  // kWrite: the bytes written, registered under desc
  void* desc = nullptr;
  Put* put = nullptr;  // kWrite: the message it belongs to
};

// A frame of `len` bytes in b, to be sent to `to`.
inline Op* frame_op(uint64_t to, Buffer* b, size_t len) {
  auto* op = new Op;
  op->kind = OpKind::kSend;
  op->buf = b;
  op->len = len;
  op->addr = to;
  return op;
}

}  // namespace caravan::rendezvous

#endif  // CARAVAN_RENDEZVOUS_OP_H
