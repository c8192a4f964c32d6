// The RDMA device an instance runs on, and the checks init() makes before
// touching one: is there a device at all, and may this process lock enough
// memory to register its buffers.
#ifndef CARAVAN_VAN_VERBS_DEVICE_H
#define CARAVAN_VAN_VERBS_DEVICE_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "caravan/plugin/plugin_cxx.hpp"

namespace caravan::van_verbs {

// Throws UNAVAILABLE (naming the cause) when ibv_get_device_list finds none.
void require_device();

struct MemlockVerdict {
  enum Level { kOk, kWarn, kFail } level = kOk;
  std::string text;  // empty when kOk
};

// What RLIMIT_MEMLOCK `limit` (RLIM_INFINITY as UINT64_MAX) means for a van
// that may register `want` bytes and cannot work below `need` bytes.
// A process with CAP_IPC_LOCK is not bound by the limit.
MemlockVerdict judge_memlock(uint64_t limit, bool ipc_lock, uint64_t want, uint64_t need);

// judge_memlock for this process: logs the warning, throws NO_MEMORY on kFail.
void check_memlock(const plugin::Host& host, uint64_t want, uint64_t need);

// Protection domain, completion channel and queue, and the shared receive
// queue every connection of the instance uses. The context belongs to
// librdmacm (rdma_cm ids carry it), so connections and this agree on it.
class Device {
 public:
  Device(ibv_context* ctx, size_t rx_depth, size_t send_depth, size_t cq_depth);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  ibv_context* context() const { return ctx_; }
  ibv_pd* pd() const { return pd_; }
  ibv_cq* cq() const { return cq_; }
  ibv_srq* srq() const { return srq_; }
  int channel_fd() const { return channel_->fd; }
  const std::string& name() const { return name_; }
  size_t send_depth() const { return send_depth_; }
  // Completions the CQ can hold beyond the receive queue's.
  size_t send_budget() const { return send_budget_; }
  uint8_t max_rd_atomic() const { return max_rd_atomic_; }
  uint8_t max_dest_rd_atomic() const { return max_dest_rd_atomic_; }

  // Takes a completion event off the channel (if one is there) and re-arms
  // the CQ; the caller polls the CQ afterwards either way.
  void rearm();

 private:
  void release() noexcept;

  ibv_context* ctx_;
  std::string name_;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_srq* srq_ = nullptr;
  size_t send_depth_ = 0;
  size_t send_budget_ = 0;
  uint8_t max_rd_atomic_ = 1;
  uint8_t max_dest_rd_atomic_ = 1;
  unsigned unacked_ = 0;
};

}  // namespace caravan::van_verbs

#endif  // CARAVAN_VAN_VERBS_DEVICE_H
