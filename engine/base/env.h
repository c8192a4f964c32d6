// Reading environment variables with errors that name the variable and the
// value at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace caravan::env {

// The variable's value; unset and empty both count as absent.
std::optional<std::string> get(const char* name);

// The variable as a decimal integer in [lo, hi]; `fallback` when absent.
// Throws a CARAVAN_ERR_CONFIG error naming the variable, the value and the
// range when it is malformed or out of range.
int64_t integer(const char* name, int64_t lo, int64_t hi, std::optional<int64_t> fallback);

// Like integer() but the variable must be set.
int64_t required_integer(const char* name, int64_t lo, int64_t hi);

// The variable, which must be set; the error says what it is for.
std::string required(const char* name, const char* meaning);

// "0"/"1" (also "false"/"true"); anything else is an error.
bool boolean(const char* name, bool fallback);

// Parses text as an integer in [lo, hi] for the variable `name`.
int64_t parse_integer(const char* name, const std::string& text, int64_t lo, int64_t hi);

}  // namespace caravan::env
