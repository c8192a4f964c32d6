// The progress thread's side of the protocol: completions from the
// transport handed to the part that owns each operation, and pump(), which
// posts what can be posted.
#include "rendezvous/protocol.h"

namespace caravan::rendezvous {

void Protocol::complete(void* ctx, bool ok, size_t len, const std::string& err) {
  locked([&] {
    auto* op = static_cast<Op*>(ctx);
    if (!posts_.completed(op)) return;
    switch (op->kind) {
      case OpKind::kSend:
        if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a send failed: " + err);
        sender_.frame_done(op, ok);
        break;
      case OpKind::kRead:
        if (!ok && !closing_)
          log_(CARAVAN_LOG_ERROR, "a remote read from " + op->msg->src->peer + " failed: " + err);
        receiver_.read_done(op, ok);
        break;
      case OpKind::kWrite:
        if (!ok && !closing_) log_(CARAVAN_LOG_ERROR, "a remote write failed: " + err);
        sender_.write_done(op, ok);
        break;
      case OpKind::kRecv:
        if (closing_) {
          receiver_.drop_receive(op);
          break;
        }
        if (ok)
          on_received(op->buf->data, len);
        else
          log_(CARAVAN_LOG_WARNING, "a receive failed: " + err);
        posts_.queue(op);  // repost the same buffer
        break;
    }
  });
}

// Notices and grants are for the sending side; everything else for the
// receiving side.
void Protocol::on_received(const char* buf, size_t len) {
  Frame f;
  if (!receiver_.parse(buf, len, &f)) return;
  switch (f.kind) {
    case Kind::kFin:
      return sender_.on_notice(f);
    case Kind::kGrant:
      return sender_.on_grant(f);
    default:
      return receiver_.on_frame(f, buf, len);
  }
}

// The transport refused an operation for good: it ends as if it failed.
void Protocol::post_failed(Op* op) {
  switch (op->kind) {
    case OpKind::kSend:
      return sender_.frame_done(op, false);
    case OpKind::kRead:
      return receiver_.read_done(op, false);
    case OpKind::kWrite:
      return sender_.write_done(op, false);
    case OpKind::kRecv:
      return receiver_.drop_receive(op);
  }
}

bool Protocol::pump() {
  SendCompletions finished;
  bool did;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return false;
    posts_.start_round();
    receiver_.post_receives();
    sender_.withdraw_orphans();
    receiver_.start_reads();
    posts_.post_queued([this](Op* op) { post_failed(op); });
    sender_.step();
    finished = done_.take();
    did = posts_.posted_this_round() || !finished.empty();
  }
  finished.report(inbox_);
  return did;
}

bool Protocol::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return posts_.busy();
}

void Protocol::cancel_receives() {
  std::lock_guard<std::mutex> lock(mu_);
  posts_.cancel_receives();
}

size_t Protocol::posted() {
  std::lock_guard<std::mutex> lock(mu_);
  return posts_.posted();
}

std::string Protocol::describe_posted() {
  std::lock_guard<std::mutex> lock(mu_);
  return posts_.describe_posted();
}

}  // namespace caravan::rendezvous
