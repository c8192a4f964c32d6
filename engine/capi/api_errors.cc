#include "engine/capi/api_errors.h"

#include <cstdint>

#include "engine/base/dtype.h"
#include "engine/base/log.h"

namespace caravan::capi {
namespace {

thread_local int t_code = 0;
thread_local std::string t_message;

const char* generic_message(int code) {
  switch (code) {
    case CARAVAN_OK:
      return "success";
    case CARAVAN_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case CARAVAN_ERR_NOT_INITIALIZED:
      return "caravan_init() has not been called";
    case CARAVAN_ERR_MISMATCH:
      return "tensor reused with another count or dtype";
    case CARAVAN_ERR_BUSY:
      return "tensor already has a push_pull in flight";
    case CARAVAN_ERR_TIMEOUT:
      return "deadline passed";
    case CARAVAN_ERR_PEER_LOST:
      return "a node of the job failed";
    case CARAVAN_ERR_CONFIG:
      return "bad configuration";
    case CARAVAN_ERR_PLUGIN:
      return "plugin could not be loaded";
    case CARAVAN_ERR_TRANSPORT:
      return "transport failure";
    case CARAVAN_ERR_STATE:
      return "call not valid in this state";
    case CARAVAN_ERR_INTERNAL:
      return "internal error";
    case CARAVAN_ERR_SERVER:
      return "a server refused the request";
    case CARAVAN_ERR_REGROUPED:
      return "the job lost a node and goes on without it: call caravan_rejoin()";
  }
  return "unknown error code";
}

}  // namespace

int fail(int code, const std::string& message) {
  t_code = code;
  t_message = message;
  CARAVAN_LOG(DEBUG) << "API error " << code << ": " << message;
  return code;
}

int check_tensor(const char* name, void* data, size_t count, caravan_dtype dtype) {
  if (!name || !*name) return fail(CARAVAN_ERR_INVALID_ARGUMENT, "tensor name is NULL or empty");
  if (!data)
    return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                std::string("data is NULL for tensor '") + name + "'");
  if (count == 0)
    return fail(CARAVAN_ERR_INVALID_ARGUMENT, std::string("count is 0 for tensor '") + name + "'");
  if (dtype_size(dtype) == 0)
    return fail(CARAVAN_ERR_INVALID_ARGUMENT, "dtype " + std::to_string(static_cast<int>(dtype)) +
                                                  " of tensor '" + name +
                                                  "' is not a caravan_dtype");
  if (count > SIZE_MAX / dtype_size(dtype))
    return fail(CARAVAN_ERR_INVALID_ARGUMENT,
                std::string("count of tensor '") + name + "' overflows size_t");
  return 0;
}

const char* error_text(int code) {
  if (code == t_code && code != 0 && !t_message.empty()) return t_message.c_str();
  return generic_message(code);
}

}  // namespace caravan::capi

extern "C" const char* caravan_strerror(int code) { return caravan::capi::error_text(code); }
