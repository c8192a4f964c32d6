#include "inbound.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace caravan::van_tcp {
namespace {

// One read() takes this much of a stream of small messages at once.
constexpr size_t kStagingBytes = 256 * 1024;
// A body still wanting this much is read straight into its memory: a
// read() more costs less than copying it out of the staging buffer.
constexpr size_t kDirectBytes = 32 * 1024;
// After a large message, a staging read takes only this much, so that the
// next large body does not land in the staging buffer and need that copy.
constexpr size_t kHeaderReadBytes = 2048;
// Where the rest of a dropped message's lent segment is read to, in pieces.
constexpr size_t kDiscardBytes = 64 * 1024;
constexpr size_t kAlign = 64;
constexpr size_t kTurnBytes = 8 << 20;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

Received::~Received() {
  if (lend) lending->unclaim(slot, lend);
  std::free(memory);
}

Inbound::Inbound(int fd, std::string peer, size_t max_message_bytes, Lending& lending)
    : fd_(fd),
      peer_(std::move(peer)),
      max_message_bytes_(max_message_bytes),
      lending_(lending),
      staging_(kStagingBytes),
      discard_(kDiscardBytes) {}

Inbound::~Inbound() {
  if (fd_ >= 0) ::close(fd_);
}

bool Inbound::start_body(std::string* why) {
  FrameHead head;
  std::memcpy(&head, staging_.data() + staged_begin_, sizeof head);
  auto r = std::make_unique<Received>();
  r->num_segments = head.num_segments;
  r->slot = head.slot;
  std::memcpy(r->lens, staging_.data() + staged_begin_ + sizeof head,
              head.num_segments * sizeof(uint64_t));
  size_t at = 0;
  for (size_t i = 0; i < r->num_segments; ++i) {
    uint64_t len = r->lens[i];
    if (len > (uint64_t{1} << 56) ||
        (max_message_bytes_ && r->body_bytes + len > max_message_bytes_)) {
      *why = "a message of more than " +
             std::to_string(max_message_bytes_ ? max_message_bytes_ : uint64_t{1} << 56) +
             " bytes (segment " + std::to_string(i) + " alone is " + std::to_string(len) + ")";
      return false;
    }
    r->body_bytes += static_cast<size_t>(len);
  }
  if (r->slot) r->lend = lending_.claim(r->slot, r->lens, r->num_segments);
  if (r->lend) r->lending = &lending_;
  for (size_t i = 0; i < r->num_segments; ++i) {
    r->offsets[i] = at;
    if (!r->lend || i != r->lend->segment) at += round_up(static_cast<size_t>(r->lens[i]));
  }
  if (posix_memalign(reinterpret_cast<void**>(&r->memory), kAlign, at ? at : kAlign) != 0) {
    *why = "a message of " + std::to_string(r->body_bytes) + " bytes, more than this host can hold";
    return false;
  }
  r->peer = peer_;
  staged_begin_ += sizeof head + head.num_segments * sizeof(uint64_t);
  current_ = std::move(r);
  in_body_ = true;
  segment_ = 0;
  segment_done_ = 0;
  return true;
}

bool Inbound::next_segment() {
  // Zero-length segments take no bytes: step over them.
  while (segment_ < current_->num_segments && segment_done_ == current_->lens[segment_]) {
    ++segment_;
    segment_done_ = 0;
  }
  return segment_ < current_->num_segments;
}

size_t Inbound::body_want() const {
  size_t want = static_cast<size_t>(current_->lens[segment_] - segment_done_);
  const Lend* lend = current_->lend.get();
  if (lend && segment_ == lend->segment && lend->dead) return std::min(want, discard_.size());
  return want;
}

unsigned char* Inbound::body_at() {
  const Lend* lend = current_->lend.get();
  if (lend && segment_ == lend->segment) {
    unsigned char* at = lend->where();
    return at ? at + segment_done_ : discard_.data();
  }
  return current_->memory + current_->offsets[segment_] + segment_done_;
}

bool Inbound::dead(const Received& r) {
  if (!r.lend) return false;
  std::lock_guard<std::mutex> lock(r.lend->mu);
  return r.lend->dead;
}

std::unique_lock<std::mutex> Inbound::lock_if_lent() const {
  const std::shared_ptr<Lend>& lend = current_->lend;
  if (lend && segment_ == lend->segment) return lend->lock_for_writing();
  return {};
}

void Inbound::advance_body(size_t n) { segment_done_ += n; }

Inbound::State Inbound::parse(std::vector<std::unique_ptr<Received>>* done, std::string* why) {
  for (;;) {
    size_t staged = staged_end_ - staged_begin_;
    if (!in_body_) {
      if (staged < sizeof(FrameHead)) break;
      FrameHead head;
      std::memcpy(&head, staging_.data() + staged_begin_, sizeof head);
      if (head.magic != kFrameMagic) {
        *why = "bytes that are not a Caravan tcp van frame (magic 0x" + [&] {
          char hex[9];
          std::snprintf(hex, sizeof hex, "%08x", head.magic);
          return std::string(hex);
        }() + ")";
        return State::kMalformed;
      }
      if (head.num_segments < 1 || head.num_segments > CARAVAN_VAN_MAX_SEGMENTS_V2) {
        *why = "a message of " + std::to_string(head.num_segments) + " segments (1 to " +
               std::to_string(CARAVAN_VAN_MAX_SEGMENTS_V2) + " allowed)";
        return State::kMalformed;
      }
      if (staged < sizeof head + head.num_segments * sizeof(uint64_t)) break;
      if (!start_body(why)) return State::kMalformed;
      continue;
    }
    if (!next_segment()) {
      large_ = current_->body_bytes >= kDirectBytes;
      if (dead(*current_))
        ++dropped_;  // its lent memory was taken back and could not be moved
      else
        done->push_back(std::move(current_));
      current_.reset();
      in_body_ = false;
      continue;
    }
    if (staged == 0) break;
    size_t n;
    {
      auto lent = lock_if_lent();
      size_t want = body_want();
      n = want < staged ? want : staged;
      std::memcpy(body_at(), staging_.data() + staged_begin_, n);
    }
    staged_begin_ += n;
    advance_body(n);
  }
  // What is left is the start of a header or nothing: move it to the front.
  size_t left = staged_end_ - staged_begin_;
  if (left && staged_begin_) std::memmove(staging_.data(), staging_.data() + staged_begin_, left);
  staged_begin_ = 0;
  staged_end_ = left;
  return State::kOpen;
}

Inbound::State Inbound::read_available(std::vector<std::unique_ptr<Received>>* done,
                                       std::string* why) {
  // The poller comes back while the socket stays readable: a bound on one
  // turn keeps one busy sender from holding up the other connections.
  size_t budget = kTurnBytes;
  // A read that got less than it asked for emptied the socket: epoll says
  // when more comes, so no read is spent to hear EAGAIN.
  bool drained = false;
  for (;;) {
    State s = parse(done, why);
    if (s != State::kOpen || budget == 0 || drained) return s;
    // A large body goes straight into its memory, not through the staging buffer.
    // (parse() left in_body_ set only with a segment still wanting bytes.)
    std::unique_lock<std::mutex> lent;
    if (in_body_) lent = lock_if_lent();
    size_t want = in_body_ ? body_want() : 0;
    ssize_t got;
    if (want >= kDirectBytes) {
      {
        unsigned char* to = body_at();
        do got = ::recv(fd_, to, want, 0);
        while (got < 0 && errno == EINTR);
        if (lent) lent.unlock();
      }
      if (got > 0) {
        advance_body(static_cast<size_t>(got));
        budget -= std::min(budget, static_cast<size_t>(got));
        drained = static_cast<size_t>(got) < want;
        continue;
      }
    } else {
      if (lent) lent.unlock();
      size_t room = staging_.size() - staged_end_;
      if (large_) room = std::min(room, kHeaderReadBytes);
      do got = ::recv(fd_, staging_.data() + staged_end_, room, 0);
      while (got < 0 && errno == EINTR);
      if (got > 0) {
        staged_end_ += static_cast<size_t>(got);
        budget -= std::min(budget, static_cast<size_t>(got));
        drained = static_cast<size_t>(got) < room;
        continue;
      }
    }
    if (got == 0) return State::kClosed;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return State::kOpen;
    *why = std::strerror(errno);
    return State::kClosed;
  }
}

}  // namespace caravan::van_tcp
