// One partition of one push_pull, from its queueing to its end, as a state
// machine. Two events end a partition that went on the wire, in either
// order: the van is done reading its memory (SENT), and its answer arrived.
// An answer that comes first waits here: until SENT the van may still read
// the memory the answer would be written to (van_v2.h, send).
//
//   queued -> lending -> on wire -> sent ---------> storing -> done
//                           \                     /
//                            -> answered early --
//   any stage before done -> done, failed (never sent, send failed, answer
//   was an error); answers to a done partition are late and only counted.
//
// No locks: Operation owns its flights and changes them under its own.
#pragma once

#include <cstdint>
#include <memory>

#include "engine/kv/kv_message.h"

namespace caravan {

class PartitionFlight {
 public:
  enum class Stage { kQueued, kLending, kOnWire, kSent, kAnsweredEarly, kStoring, kDone };

  // What the receiving thread does after an event.
  enum class Then {
    kNothing,  // wait for the other event
    kStore,    // store the answer now (the one passed in, or take_answer())
    kEnded,    // the partition ended here, failed, with no answer to store
    kLate,     // the partition had ended: the answer is only counted
  };

  // When each step began (Timeline::now_us), for the timeline; 0 until then.
  struct Moments {
    int64_t queued_us = 0, send_us = 0, sent_us = 0, answer_us = 0;
  };

  Stage stage() const { return stage_; }
  bool done() const { return stage_ == Stage::kDone; }
  // Whether its answer has come (stored or waiting), for a timeout's words.
  bool answered() const { return stage_ >= Stage::kAnsweredEarly; }
  Moments moments;

  // Taken from the send queue; the van may be lent the answer's place.
  void lending() { stage_ = Stage::kLending; }
  // Handed to the van.
  void on_wire() { stage_ = Stage::kOnWire; }
  // The van is done with it. A failed send ends it (its answer can never
  // come; one that did anyway is not trusted).
  Then sent(bool ok);
  // Its answer arrived (or the endpoint's local error for it); kept here
  // (moved from) when it came before SENT. An error waits for SENT too: the
  // van may still read the tensor, which its caller may free at the end.
  Then answered(KVMessage& answer);
  // The answer waiting since before SENT, once sent() said kStore.
  std::unique_ptr<KVMessage> take_answer() { return std::move(early_); }
  // It ends: stored, failed, or never sent.
  void end() {
    early_.reset();
    stage_ = Stage::kDone;
  }

  // The van took a lend of the tensor's memory for its answer (van_v2.h,
  // lend); settled (used or taken back) by whoever clears it.
  bool lent = false;

 private:
  Stage stage_ = Stage::kQueued;
  std::unique_ptr<KVMessage> early_;  // kAnsweredEarly
};

}  // namespace caravan
