// A data-plane message as a van hands it to the engine: decode_kv_message,
// then, for a request, the summation server's parse_push_pull_request.
// Input: the segment count, this node's id, the job's worker count, three
// segment lengths (u16), then the header segment (72 bytes) and the three
// segments.
#include <string>

#include "engine/kv/kv_message.h"
#include "engine/server/push_pull_request.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace caravan;
  fuzz::FuzzInput in(data, size);
  size_t num_segments = in.byte() % (CARAVAN_VAN_MAX_SEGMENTS_V2 + 1);
  int my_id = static_cast<int8_t>(in.byte());
  int num_workers = 1 + in.byte() % 16;
  size_t lens[3] = {in.u16(), in.u16(), in.u16()};
  caravan_recv_segment_v2 segs[CARAVAN_VAN_MAX_SEGMENTS_V2] = {};
  size_t got = 0;
  segs[0].data = const_cast<uint8_t*>(in.take(wire::kHeaderBytes, &got));
  segs[0].len = got;
  for (size_t i = 1; i < 4; ++i) {
    segs[i].data = const_cast<uint8_t*>(in.take(lens[i - 1], &got));
    segs[i].len = got;
  }

  KVMessage m;
  std::string why;
  if (!decode_kv_message(segs, num_segments, my_id, &m, &why)) {
    if (why.empty()) fuzz::broken("a KV message refused without a reason");
    return 0;
  }
  if (m.keys.len != m.head.seg_len[0] || m.vals.len != m.head.seg_len[1] ||
      m.lens.len != m.head.seg_len[2])
    fuzz::broken("decoded segments differ from the header's lengths");
  if (!(m.head.flags & wire::kRequest) || (m.head.flags & wire::kRouted)) return 0;

  PushPullRequest req;
  if (!parse_push_pull_request(m, num_workers, &req, &why)) {
    if (why.empty()) fuzz::broken("a push_pull request refused without a reason");
    return 0;
  }
  if (req.rank < 0 || req.rank >= num_workers) fuzz::broken("rank out of range accepted");
  if (req.element_bytes == 0 || req.count * req.element_bytes != m.vals.len)
    fuzz::broken("value bytes are not count * element size");
  return 0;
}
