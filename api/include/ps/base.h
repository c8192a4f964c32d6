// Basic ps-lite types: keys and node groups.
#ifndef PS_BASE_H_
#define PS_BASE_H_

#include <cstdint>
#include <limits>

#include "ps/internal/logging.h"

namespace ps {

// 64-bit keys only: ps-lite's USE_KEY32 build option is not offered.
using Key = uint64_t;
static const Key kMaxKey = std::numeric_limits<Key>::max();

// Node groups; combine by addition (kServerGroup + kWorkerGroup).
static const int kScheduler = 1;
static const int kServerGroup = 2;
static const int kWorkerGroup = 4;

}  // namespace ps

#endif  // PS_BASE_H_
