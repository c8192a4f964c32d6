// The message an application object sends and receives: the header fields
// ps-lite exposes and up to three arrays (keys, values, lengths).
#ifndef PS_INTERNAL_MESSAGE_H_
#define PS_INTERNAL_MESSAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ps/sarray.h"

namespace ps {

// A node of the job as ps-lite names it. JOINT (bytedance/ps-lite) is a
// process that is a worker and a server at once.
struct Node {
  static const int kEmpty = -1;
  enum Role { SERVER, WORKER, SCHEDULER, JOINT };
  Role role = WORKER;
  int id = kEmpty;
  int customer_id = 0;
  std::string hostname;
  int port = kEmpty;
  bool is_recovery = false;  // never: Caravan replaces no node in a running job

  std::string DebugString() const {
    static const char* const names[] = {"server", "worker", "scheduler", "joint"};
    return std::string("role=") + names[role] + ", id=" + std::to_string(id) +
           ", ip=" + hostname + ", port=" + std::to_string(port);
  }
  std::string ShortDebugString() const { return DebugString(); }
};

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
  // bytedance/ps-lite: where the values are and where they should go, the
  // first key, the values' bytes, and two application fields carried back
  // in the response.
  DeviceType src_dev_type = UNK;
  int src_dev_id = -1;
  DeviceType dst_dev_type = UNK;
  int dst_dev_id = -1;
  uint64_t key = 0;
  uint64_t addr = 0;
  int val_len = 0;
  int option = 0;
  // A pull request: the bytes its destination holds (sizes its slot when
  // values travel through shared memory, BYTEPS_ENABLE_IPC).
  size_t pull_bytes = 0;
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
