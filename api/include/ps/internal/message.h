// The message an application object sends and receives: the header fields
// ps-lite exposes and up to three arrays (keys, values, lengths).
#ifndef PS_INTERNAL_MESSAGE_H_
#define PS_INTERNAL_MESSAGE_H_

#include <string>
#include <vector>

#include "ps/sarray.h"

namespace ps {

struct Meta {
  static const int kEmpty = -1;
  int head = kEmpty;         // application command (SimpleApp head, KV cmd)
  int app_id = kEmpty;
  int customer_id = kEmpty;
  int timestamp = kEmpty;
  int sender = kEmpty;       // node id
  int recver = kEmpty;       // node id
  bool request = false;
  bool push = false;
  bool pull = false;
  bool simple_app = false;
  std::string body;          // SimpleApp body
  int priority = 0;
};

struct Message {
  Meta meta;
  std::vector<SArray<char>> data;  // keys, vals, lens

  template <typename V>
  void AddData(const SArray<V>& val) {
    CHECK_LT(data.size(), 3u) << "a message carries at most keys, values and lengths";
    data.push_back(SArray<char>(val));
  }
};

}  // namespace ps

#endif  // PS_INTERNAL_MESSAGE_H_
