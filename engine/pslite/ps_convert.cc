#include "engine/pslite/ps_convert.h"

#include <cstdint>
#include <memory>

#include "engine/base/log.h"

namespace caravan::psl {

ps::SArray<char> view(const Blob& b) {
  ps::SArray<char> out;
  if (b.len == 0) return out;
  if (reinterpret_cast<uintptr_t>(b.data) % alignof(uint64_t) != 0) {
    out.CopyFrom(static_cast<const char*>(b.data), b.len);
    return out;
  }
  auto keep = b.keep;
  out.reset(static_cast<char*>(b.data), b.len, [keep](char*) {});
  return out;
}

Blob blob_of(const ps::SArray<char>& a) {
  return Blob{a.data(), a.size(), std::shared_ptr<const void>(a.ptr(), a.data())};
}

ps::Error ps_error(const std::string& what) {
  caravan::Log::write(CARAVAN_LOG_ERROR, what);
  return ps::Error(what);
}

ps::Node::Role ps_role(Role r) {
  return r == Role::kScheduler ? ps::Node::SCHEDULER
         : r == Role::kServer  ? ps::Node::SERVER
                               : ps::Node::WORKER;
}

}  // namespace caravan::psl
