#include "engine/worker/partition_flight.h"

#include <utility>

namespace caravan {

PartitionFlight::Then PartitionFlight::sent(bool ok) {
  switch (stage_) {
    case Stage::kOnWire:
      if (!ok) {
        stage_ = Stage::kDone;
        return Then::kEnded;
      }
      stage_ = Stage::kSent;
      return Then::kNothing;
    case Stage::kAnsweredEarly:
      if (!ok) {
        end();
        return Then::kEnded;
      }
      stage_ = Stage::kStoring;
      return Then::kStore;
    default:  // a van reports each send once: nothing else can be waiting
      return Then::kNothing;
  }
}

PartitionFlight::Then PartitionFlight::answered(KVMessage& answer) {
  switch (stage_) {
    case Stage::kOnWire:
      early_ = std::make_unique<KVMessage>(std::move(answer));
      stage_ = Stage::kAnsweredEarly;
      return Then::kNothing;
    case Stage::kSent:
      stage_ = Stage::kStoring;
      return Then::kStore;
    default:  // done (failed, or answered already): the endpoint answers each request once
      return Then::kLate;
  }
}

}  // namespace caravan
