// One accepted connection's reading side: bytes from the socket become
// whole messages. Only the poller thread touches it. Small messages are
// parsed out of a staging buffer that one read() fills with several of
// them; the body of a large one is read straight into its own memory (or
// the memory lent for it), and after a large message the next header is
// read alone, so that its body is not read into the staging buffer first
// and copied (a copy of every byte cost more CPU than the read() it saves).
#ifndef CARAVAN_VAN_TCP_INBOUND_H
#define CARAVAN_VAN_TCP_INBOUND_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "caravan/plugin/van_v2.h"
#include "frame.h"
#include "lending.h"

namespace caravan::van_tcp {

// A received message's memory: one allocation holding every segment, each
// at a 64-byte boundary (the engine sums in place with vector loads), but
// for a segment read into memory the engine lent, which `lend` holds.
struct Received {
  ~Received();
  unsigned char* memory = nullptr;
  uint64_t slot = 0;
  std::shared_ptr<Lend> lend;
  Lending* lending = nullptr;  // set with lend; told when this ends (lending.h, unclaim)
  size_t num_segments = 0;
  uint64_t lens[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  size_t offsets[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  size_t body_bytes = 0;  // the segments' bytes, without the padding between them
  std::string peer;
};

class Inbound {
 public:
  Inbound(int fd, std::string peer, size_t max_message_bytes, Lending& lending);
  ~Inbound();
  Inbound(const Inbound&) = delete;
  Inbound& operator=(const Inbound&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }

  enum class State { kOpen, kClosed, kMalformed };
  // Reads what the socket has, appending every message it completes to
  // `done`. kClosed: the peer closed or the connection failed (a message
  // cut short is dropped); kMalformed: it sent what no Caravan peer sends
  // (`why` says what). Either way the caller closes the connection.
  State read_available(std::vector<std::unique_ptr<Received>>* done, std::string* why);
  // Messages dropped so far because unlend could not move their lent
  // segment into memory of the van's own (lending.h, Lend::dead).
  size_t dropped() const { return dropped_; }

 private:
  // Takes every whole message the staging buffer holds, and what it holds
  // of the body being read; what is left is the start of a header.
  State parse(std::vector<std::unique_ptr<Received>>* done, std::string* why);
  bool start_body(std::string* why);
  // Steps over finished and empty segments; false once the body is whole.
  bool next_segment();
  // How many bytes the current segment still wants, and where the next one
  // goes: in a lent segment, only while holding lock_if_lent()'s lock.
  size_t body_want() const;
  unsigned char* body_at();
  static bool dead(const Received& r);
  std::unique_lock<std::mutex> lock_if_lent() const;
  void advance_body(size_t n);

  int fd_;
  std::string peer_;
  size_t max_message_bytes_;  // 0: unlimited
  Lending& lending_;

  std::vector<unsigned char> staging_;
  std::vector<unsigned char> discard_;  // the rest of a dead lent segment goes here
  size_t staged_begin_ = 0, staged_end_ = 0;

  // The message being read: its header, then its body.
  bool in_body_ = false;
  std::unique_ptr<Received> current_;
  size_t segment_ = 0;       // the segment being filled
  size_t segment_done_ = 0;  // bytes of it already in
  size_t dropped_ = 0;
  bool large_ = false;  // the last message's body was large: read headers alone
};

}  // namespace caravan::van_tcp

#endif  // CARAVAN_VAN_TCP_INBOUND_H
