// Between the engine's messages and ps-lite's types: received segments as
// SArrays, SArrays as Blobs, roles, and the ps::Error that is logged as it
// is thrown (ps-lite programs often print nothing of an exception).
#pragma once

#include <string>

#include "engine/base/config.h"
#include "engine/kv/kv_message.h"
#include "ps/base.h"
#include "ps/internal/message.h"
#include "ps/sarray.h"

namespace caravan::psl {

// A received segment as a SArray<char> that keeps the van's memory alive;
// copied only when misaligned for 8-byte keys and values.
ps::SArray<char> view(const Blob& b);
// The SArray's memory, kept alive by the Blob.
Blob blob_of(const ps::SArray<char>& a);
ps::Error ps_error(const std::string& what);
ps::Node::Role ps_role(Role r);

}  // namespace caravan::psl
