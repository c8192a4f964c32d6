// The summation interface inside the engine; PluginReducer adapts a reducer
// plugin's C table to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "caravan/dtype.h"

namespace caravan {

class Reducer {
 public:
  virtual ~Reducer() = default;
  // "cpu (avx2)": name and kernel, for logs.
  virtual const std::string& description() const = 0;
  // dst += src; throws on failure.
  virtual void sum(void* dst, const void* src, size_t count, caravan_dtype dtype) = 0;
  // dst = srcs[0] + ... + srcs[num_srcs - 1] in one pass over memory; dst
  // may be srcs[0]; throws on failure.
  virtual void sum_many(void* dst, const void* const* srcs, size_t num_srcs, size_t count,
                        caravan_dtype dtype) = 0;
};

// "host memory, async stream": the CARAVAN_REDUCER_CAP_* bits by name.
std::string reducer_capability_names(uint64_t caps);

// Loads `choice` (CARAVAN_REDUCER) and creates an instance.
std::unique_ptr<Reducer> open_reducer(const std::string& choice, const std::string& plugin_path);

}  // namespace caravan
