#include "rendezvous/post_queue.h"

namespace caravan::rendezvous {

PostQueue::PostQueue(Transport& t, LogFn log) : t_(t), log_(std::move(log)) {}

PostQueue::Result PostQueue::post(Op* op) {
  std::string err;
  Transport::Post r = Transport::Post::kFailed;
  switch (op->kind) {
    case OpKind::kSend:
      r = t_.post_send(op->addr, op->buf->data, op->len, op->buf->reg.desc, op, &err);
      break;
    case OpKind::kRecv:
      r = t_.post_recv(op->buf->data, op->len, op->buf->reg.desc, op, &err);
      break;
    case OpKind::kRead:
      r = t_.post_read(op->addr, op->into, op->len, op->buf->reg.desc, op->raddr, op->key, op,
                       &err);
      break;
    case OpKind::kWrite:
      r = t_.post_write(op->addr, op->local, op->len, op->desc, op->raddr, op->key, op, &err);
      break;
  }
  if (r == Transport::Post::kAgain) return Result::kAgain;
  posted_any_ = true;
  if (r == Transport::Post::kPosted) {
    posted_.insert(op);
    if (op->kind != OpKind::kRecv) ++in_flight_;
    return Result::kPosted;
  }
  log_(CARAVAN_LOG_ERROR, "posting failed: " + err);
  return Result::kFailed;
}

bool PostQueue::completed(Op* op) {
  if (!posted_.erase(op)) {
    log_(CARAVAN_LOG_ERROR, "completion for an operation not in flight");
    return false;
  }
  if (op->kind != OpKind::kRecv) --in_flight_;
  return true;
}

std::string PostQueue::describe_posted() const {
  size_t n[4] = {};
  for (Op* op : posted_) ++n[static_cast<int>(op->kind)];
  auto count = [](size_t k, const char* what) {
    return std::to_string(k) + " " + what + (k == 1 ? "" : "s");
  };
  return count(n[0], "send") + ", " + count(n[2], "read") + ", " + count(n[3], "write") + ", " +
         count(n[1], "receive");
}

void PostQueue::cancel_receives() {
  for (Op* op : posted_)
    if (op->kind == OpKind::kRecv) t_.cancel(op);
}

void PostQueue::clear() {
  for (Op* op : posted_) delete op;
  posted_.clear();
  for (Op* op : queued_) delete op;
  queued_.clear();
}

}  // namespace caravan::rendezvous
