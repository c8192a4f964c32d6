// Element sizes and names of caravan_dtype under the engine's short names.
// The table itself is the public one in caravan/dtype.h, so the engine, the
// plugins and the test programs cannot disagree on it.
#pragma once

#include <cstddef>

#include "caravan/dtype.h"

namespace caravan {

// Bytes of one element; 0 for a number that is no caravan_dtype, so a dtype
// read from a message is checked by asking for its size.
inline size_t dtype_size(int dtype) { return caravan_dtype_size(dtype); }

// "float32", ...; "invalid" for a number that is no caravan_dtype.
inline const char* dtype_name(int dtype) { return caravan_dtype_name(dtype); }

}  // namespace caravan
