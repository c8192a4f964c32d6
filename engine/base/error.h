// Errors inside the engine: an exception with the public error code it maps
// to, so the C API can hand both the code and the message to the caller.
#pragma once

#include <stdexcept>
#include <string>

#include "caravan/caravan.h"

namespace caravan {

class Error : public std::runtime_error {
 public:
  Error(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

inline Error config_error(const std::string& m) { return Error(CARAVAN_ERR_CONFIG, m); }

}  // namespace caravan
