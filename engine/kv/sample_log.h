// BYTEPS_DEBUG_SAMPLE_TENSOR: the first and last value of every partition
// of one tensor, logged at each stage (worker push, server receive, server
// sum, worker pull), so a user can see where a wrong value first appears.
// The worker marks the tensor's messages with wire::kSample, since servers
// only ever see partition keys, never tensor names.
#pragma once

#include <cstddef>
#include <string>

#include "engine/base/log.h"

namespace caravan {

// "3 float32 values: first 1.5, last -2" (values printed in their dtype).
std::string sample_values(const void* data, size_t bytes, int dtype);

}  // namespace caravan

// Shown whatever BYTEPS_LOG_LEVEL says: setting the variable asks for them.
#define CARAVAN_SAMPLE_LOG(is_sample) \
  if (!(is_sample)) {                 \
  } else                              \
    ::caravan::LogLine(::CARAVAN_LOG_INFO)
