#include "prefixer.h"

namespace caravan::launch {

void LinePrefixer::Feed(const char* data, size_t len, std::string* out) {
  size_t start = 0;
  for (size_t i = 0; i < len; ++i) {
    if (data[i] != '\n') continue;
    out->append(prefix_);
    out->append(pending_);
    pending_.clear();
    out->append(data + start, i + 1 - start);
    start = i + 1;
  }
  pending_.append(data + start, len - start);
  if (pending_.size() >= kMaxPending) Flush(out);
}

void LinePrefixer::Flush(std::string* out) {
  if (pending_.empty()) return;
  out->append(prefix_);
  out->append(pending_);
  out->push_back('\n');
  pending_.clear();
}

}  // namespace caravan::launch
