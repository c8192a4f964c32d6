// The wire decoder: the 72-byte header (decode, plausible_prefix) and the
// Reader of control-message bodies. Input: one byte giving the number of
// Reader operations, the operations, then the bytes they read (whose first
// 72 bytes are also decoded as a header).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/wire/bytes.h"
#include "engine/wire/header.h"
#include "tests/fuzz/fuzz_input.h"

namespace caravan::fuzz {
namespace {

bool same(const wire::Header& a, const wire::Header& b) {
  return a.type == b.type && a.flags == b.flags && a.sender == b.sender &&
         a.recipient == b.recipient && a.app_id == b.app_id && a.customer_id == b.customer_id &&
         a.timestamp == b.timestamp && a.cmd == b.cmd && a.priority == b.priority &&
         a.dtype == b.dtype && a.status == b.status && a.seg_len[0] == b.seg_len[0] &&
         a.seg_len[1] == b.seg_len[1] && a.seg_len[2] == b.seg_len[2];
}

void header(const uint8_t* p, size_t n) {
  wire::Header h;
  std::string why;
  bool ok = wire::decode(p, n, UINT64_MAX, &h, &why);
  if (!ok && why.empty()) broken("decode refused without a reason");
  // Every prefix of a header that decodes must look plausible, or the
  // control channel would drop a good peer before its header is complete.
  std::string prefix_why;
  for (size_t i = 0; i <= n && i <= wire::kHeaderBytes; ++i) {
    bool plausible = wire::plausible_prefix(p, i, &prefix_why);
    if (ok && !plausible) broken("a prefix of a valid header is refused");
    if (!plausible && prefix_why.empty()) broken("plausible_prefix refused without a reason");
  }
  if (!ok) return;
  uint8_t again[wire::kHeaderBytes];
  wire::encode(h, again);
  wire::Header h2;
  if (!wire::decode(again, sizeof again, UINT64_MAX, &h2, &why))
    broken("re-encoded header refused");
  if (!same(h, h2)) broken("header does not survive encode/decode");
  // A limit refuses exactly the headers with a longer segment.
  uint64_t longest = std::max({h.seg_len[0], h.seg_len[1], h.seg_len[2]});
  if (longest > 0 && wire::decode(p, n, longest - 1, &h2, &why))
    broken("segment limit not applied");
  if (!wire::decode(p, n, longest, &h2, &why)) broken("segment at the limit refused");
}

void reader(const uint8_t* ops, size_t num_ops, const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  wire::Writer w;
  size_t consumed = 0;
  for (size_t i = 0; i < num_ops; ++i) {
    try {
      switch (ops[i] % 4) {
        case 0:
          w.u8(r.u8());
          consumed += 1;
          break;
        case 1:
          w.i32(r.i32());
          consumed += 4;
          break;
        case 2:
          w.u64(r.u64());
          consumed += 8;
          break;
        case 3: {
          std::string s = r.str(static_cast<size_t>(ops[i]) * 32);
          w.str(s);
          consumed += 8 + s.size();
          break;
        }
      }
    } catch (const std::runtime_error&) {
      // Refused: the reader must be left where it was, checked below.
    }
  }
  if (consumed > n) broken("Reader read past the end");
  if (r.done() != (consumed == n)) broken("Reader::done disagrees with what was read");
  // What was read, written back, gives the bytes read: the encoding is
  // canonical, so a body that decodes means exactly one thing.
  if (w.bytes().size() != consumed ||
      (consumed > 0 && std::memcmp(w.bytes().data(), p, consumed) != 0))
    broken("Writer does not reproduce what Reader read");
}

}  // namespace
}  // namespace caravan::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  caravan::fuzz::FuzzInput in(data, size);
  size_t num_ops = 0;
  const uint8_t* ops = in.take(in.byte(), &num_ops);
  size_t n = 0;
  const uint8_t* p = in.rest(&n);
  caravan::fuzz::header(p, n < caravan::wire::kHeaderBytes ? n : caravan::wire::kHeaderBytes);
  caravan::fuzz::reader(ops, num_ops, p, n);
  return 0;
}
