// The ps-lite Van as applications see it: Send() hands a message to the
// job's transport (the van plugin Caravan loaded).
#ifndef PS_INTERNAL_VAN_H_
#define PS_INTERNAL_VAN_H_

// What ps-lite's van.h brings in, for programs that rely on it through ps/ps.h.
#include <atomic>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ps/base.h"
#include "ps/internal/message.h"

namespace ps {

class Van {
 public:
  virtual ~Van() {}
  // Sends msg to msg.meta.recver; returns the bytes handed to the
  // transport. Throws ps::Error when the job has failed, or when the values
  // are in GPU memory (this layer serves host memory).
  virtual int Send(const Message& msg) = 0;
  // This node as the job knows it.
  virtual const Node& my_node() const = 0;
  // bytedance/ps-lite (servers): pushes from node msg.meta.sender for key
  // msg.meta.key are received into msg.data[1] (the same memory, once the
  // sizes match), so a handler finds them where it registered them.
  virtual void RegisterRecvBuffer(Message& msg) = 0;
};

}  // namespace ps

#endif  // PS_INTERNAL_VAN_H_
