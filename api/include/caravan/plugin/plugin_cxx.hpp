// C++17 conveniences for writing a plugin against the C ABI (header-only,
// part of the SDK). Nothing here crosses the boundary: the plugin still
// exports only its entry symbol and speaks the C tables.
#ifndef CARAVAN_PLUGIN_PLUGIN_CXX_HPP
#define CARAVAN_PLUGIN_PLUGIN_CXX_HPP

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>

#include "caravan/plugin/plugin.h"

namespace caravan::plugin {

// An error with the status the boundary returns for it.
class Error : public std::runtime_error {
 public:
  Error(caravan_status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  caravan_status status() const noexcept { return status_; }

 private:
  caravan_status status_;
};

// The host services of one instance, with C++ conveniences.
class Host {
 public:
  explicit Host(const caravan_host_v1* host) : host_(host) {}

  void log(caravan_log_level level, const std::string& message) const {
    if (host_ && host_->log) host_->log(host_->host_ctx, level, message.c_str());
  }
  std::optional<std::string> param(const char* name) const {
    const char* v = host_ && host_->get_param ? host_->get_param(host_->host_ctx, name) : nullptr;
    if (!v) return std::nullopt;
    return std::string(v);
  }
  std::optional<std::string> env(const char* name) const {
    const char* v = host_ && host_->get_env ? host_->get_env(host_->host_ctx, name) : nullptr;
    if (!v) return std::nullopt;
    return std::string(v);
  }
  // A parameter read as a non-negative integer; a malformed value is an
  // INVALID_ARGUMENT error naming the parameter and the value.
  long long param_int(const char* name, long long fallback) const {
    auto text = param(name);
    return text ? non_negative(name, *text) : fallback;
  }
  static long long non_negative(const char* name, const std::string& text) {
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || v < 0)
      throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                  std::string("plugin parameter ") + name + "='" + text + "' is not a non-negative integer");
    return v;
  }
  void set_error(const std::string& message) const {
    if (host_ && host_->set_error) host_->set_error(host_->host_ctx, message.c_str());
  }
  const caravan_host_v1* raw() const { return host_; }

 private:
  const caravan_host_v1* host_;
};

// A plugin parameter declared once: name, default and description, as NCCL's
// NCCL_PARAM does. The descriptor lists `info`, and the plugin reads the
// parameter through the same object, so the listing and the code cannot
// disagree on a default:
//   inline constexpr plugin::Param kThreads{"THREADS", "1", "threads that share one sum"};
//   descriptor: const caravan_param_info kParams[] = {kThreads.info, ...};
//   init:       long long threads = kThreads.integer(host);
// A default that depends on other settings is NULL in the listing (its
// description says what it is) and is applied in code to given()'s answer.
struct Param {
  constexpr Param(const char* name, const char* default_value, const char* description)
      : info{name, default_value, description} {}

  // What the job set (CARAVAN_<KIND>_<PLUGIN>_<NAME>), without the default.
  std::optional<std::string> given(const Host& host) const { return host.param(info.name); }
  std::optional<long long> given_integer(const Host& host) const {
    auto text = given(host);
    if (!text) return std::nullopt;
    return Host::non_negative(info.name, *text);
  }
  // What the job set, else the declared default.
  std::string text(const Host& host) const {
    if (auto v = given(host)) return *v;
    if (!info.default_value)
      throw Error(CARAVAN_STATUS_INTERNAL, std::string("plugin parameter ") + info.name +
                                               " has no declared default: the plugin must read it with given()");
    return info.default_value;
  }
  // As a non-negative integer; a malformed value (or default) is an
  // INVALID_ARGUMENT error naming the parameter.
  long long integer(const Host& host) const { return Host::non_negative(info.name, text(host)); }

  caravan_param_info info;
};

// Runs `body` (returning caravan_status) so that no exception crosses the
// C boundary: errors become status codes and their text goes to set_error.
template <class Body>
caravan_status guarded(const Host& host, Body&& body) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    host.set_error(e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    host.set_error("out of memory");
    return CARAVAN_STATUS_NO_MEMORY;
  } catch (const std::exception& e) {
    host.set_error(e.what());
    return CARAVAN_STATUS_INTERNAL;
  } catch (...) {
    host.set_error("unknown exception");
    return CARAVAN_STATUS_INTERNAL;
  }
}

// The entries every table built from a C++ class P shares (van_cxx.hpp,
// van_v2_cxx.hpp, reducer_cxx.hpp): P's constructor takes the host table,
// its destructor is finalize, and P::host() returns the Host it keeps.
template <class P>
struct Instance {
  // init: *out_ctx is a new P, or NULL when its constructor threw.
  static caravan_status create(const caravan_host_v1* host, void** out_ctx) noexcept {
    return guarded(Host(host), [&] {
      if (!out_ctx) throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "init: out_ctx is NULL");
      *out_ctx = nullptr;
      *out_ctx = new P(host);
      return CARAVAN_STATUS_OK;
    });
  }
  // finalize.
  static caravan_status destroy(void* ctx) noexcept {
    if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
    P* instance = static_cast<P*>(ctx);
    Host host = instance->host();  // the host table outlives the instance
    return guarded(host, [&] {
      delete instance;
      return CARAVAN_STATUS_OK;
    });
  }
  // Every other entry: `body(P&)` returns the entry's status.
  template <class Body>
  static caravan_status with(void* ctx, Body&& body) noexcept {
    if (!ctx) return CARAVAN_STATUS_INVALID_ARGUMENT;
    P& instance = *static_cast<P*>(ctx);
    return guarded(instance.host(), [&] { return body(instance); });
  }
};

// A descriptor of the given kind and ABI version: what the van, reducer and
// compressor helpers make, each with its kind's numbers and ops table.
inline caravan_plugin_descriptor plugin_descriptor(uint32_t kind, uint32_t abi_major,
                                                   uint32_t abi_minor, const char* name,
                                                   const char* version, const char* description,
                                                   const caravan_param_info* params,
                                                   size_t num_params, const void* ops) {
  return caravan_plugin_descriptor{CARAVAN_PLUGIN_MAGIC, abi_major, abi_minor, kind,
                                   sizeof(caravan_plugin_descriptor), name, version, description,
                                   params, num_params, ops};
}

// What CARAVAN_PLUGIN_ENTRY returns, from a descriptor held by value (the
// van and reducer helpers make one) or by address (the compressor helper's).
inline const caravan_plugin_descriptor* descriptor_address(const caravan_plugin_descriptor& d) {
  return &d;
}
inline const caravan_plugin_descriptor* descriptor_address(const caravan_plugin_descriptor* d) {
  return d;
}

}  // namespace caravan::plugin

// Defines the plugin's one exported symbol, returning the descriptor that
// the argument makes (built once, on the first call, and kept):
//   CARAVAN_PLUGIN_ENTRY(caravan::plugin::van_descriptor_v2<MyVan>("name", "1.0", "one line", kParams))
#define CARAVAN_PLUGIN_ENTRY(...)                                                               \
  extern "C" CARAVAN_PLUGIN_EXPORT const caravan_plugin_descriptor* caravan_plugin_entry(void) { \
    static const auto caravan_plugin_descriptor_ = (__VA_ARGS__);                                \
    return ::caravan::plugin::descriptor_address(caravan_plugin_descriptor_);                    \
  }

#endif  // CARAVAN_PLUGIN_PLUGIN_CXX_HPP
