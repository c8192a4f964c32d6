#include "rendezvous/send_job.h"

#include <algorithm>
#include <cstring>

namespace caravan::rendezvous {

Frame Job::frame(Kind kind) const {
  Frame f;
  f.kind = kind;
  f.nseg = static_cast<uint8_t>(segs.size());
  for (size_t i = 0; i < segs.size(); ++i) f.lens[i] = segs[i].len;
  f.stream = stream;
  f.seq = seq;
  return f;
}

void Job::copy(size_t from, size_t len, char* dst) const {
  for (const auto& s : segs) {
    if (len == 0) break;
    if (from >= s.len) {
      from -= s.len;
      continue;
    }
    size_t n = std::min(len, s.len - from);
    std::memcpy(dst, static_cast<const char*>(s.data) + from, n);
    dst += n;
    len -= n;
    from = 0;
  }
}

}  // namespace caravan::rendezvous
