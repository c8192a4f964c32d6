// How the C API reports a failure: a code returned, and a message kept per
// thread for caravan_strerror(); every exception stops here.
#pragma once

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

#include "caravan/caravan.h"
#include "engine/base/error.h"

namespace caravan::capi {

// Records `message` as this thread's last error and returns `code`.
int fail(int code, const std::string& message);

// Runs `body`, turning every exception into a code and a message: the
// library never throws into, or aborts, its caller.
template <class Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(CARAVAN_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(CARAVAN_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(CARAVAN_ERR_INTERNAL, "unknown exception");
  }
}

// This thread's last message when `code` is its last error, otherwise the
// code's generic text (caravan_strerror).
const char* error_text(int code);

// 0, or INVALID_ARGUMENT naming what is wrong with the tensor's arguments.
int check_tensor(const char* name, void* data, size_t count, caravan_dtype dtype);

}  // namespace caravan::capi
