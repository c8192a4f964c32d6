#include "device.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace caravan::van_verbs {

using plugin::Error;

namespace {

std::string mib(uint64_t bytes) {
  return std::to_string(bytes) + " bytes (" + std::to_string(bytes >> 20) + " MiB)";
}

// CAP_IPC_LOCK (bit 14) lifts the memlock limit; root in a container often
// has it while its limit still reads 64 KiB.
bool has_ipc_lock() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.compare(0, 7, "CapEff:") != 0) continue;
    unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
    return (caps >> 14) & 1;
  }
  return false;
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

void require_device() {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  int err = errno;
  if (list) ibv_free_device_list(list);
  if (list && n > 0) return;
  std::string why =
      "verbs van: no RDMA device found (ibv_get_device_list returned 0 devices; "
      "is an RDMA NIC or rxe configured?)";
  if (!list && err) why += " [" + errno_text(err) + "]";
  throw Error(CARAVAN_STATUS_UNAVAILABLE, why);
}

MemlockVerdict judge_memlock(uint64_t limit, bool ipc_lock, uint64_t want, uint64_t need) {
  MemlockVerdict v;
  if (ipc_lock || limit == UINT64_MAX || limit >= want) return v;
  const std::string how =
      "raise it with `ulimit -l unlimited` in the launching shell, a `* - memlock unlimited` "
      "line in /etc/security/limits.conf, LimitMEMLOCK=infinity for a systemd service, or "
      "`--ulimit memlock=-1` for a container";
  if (limit < need) {
    v.level = MemlockVerdict::kFail;
    v.text = "RLIMIT_MEMLOCK is " + mib(limit) + ", below the " + mib(need) +
             " the verbs van needs for its receive buffers and queues (it may register up to " +
             "MAX_REGISTERED_BYTES = " + mib(want) + "); " + how;
  } else {
    v.level = MemlockVerdict::kWarn;
    v.text = "RLIMIT_MEMLOCK is " + mib(limit) + ", below MAX_REGISTERED_BYTES = " + mib(want) +
             ": large messages may fail to register; " + how +
             " (or lower CARAVAN_VAN_VERBS_MAX_REGISTERED_BYTES)";
  }
  return v;
}

void check_memlock(const plugin::Host& host, uint64_t want, uint64_t need) {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return;
  uint64_t limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
  MemlockVerdict v = judge_memlock(limit, has_ipc_lock(), want, need);
  if (v.level == MemlockVerdict::kFail) throw Error(CARAVAN_STATUS_NO_MEMORY, v.text);
  if (v.level == MemlockVerdict::kWarn) host.log(CARAVAN_LOG_WARNING, v.text);
}

Device::Device(ibv_context* ctx, size_t rx_depth, size_t send_depth, size_t cq_depth) : ctx_(ctx) {
  name_ = ibv_get_device_name(ctx->device);
  auto fail = [&](const char* what, int e) {
    release();
    throw Error(CARAVAN_STATUS_IO,
                std::string(what) + " on RDMA device " + name_ + " failed: " + errno_text(e));
  };
  ibv_device_attr attr{};
  if (int rc = ibv_query_device(ctx_, &attr))
    throw Error(CARAVAN_STATUS_IO, "ibv_query_device on " + name_ + ": " + errno_text(rc));
  if (static_cast<size_t>(attr.max_srq_wr) < rx_depth)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter RX_DEPTH=" + std::to_string(rx_depth) + " exceeds the " +
                    std::to_string(attr.max_srq_wr) + " receives RDMA device " + name_ +
                    " can queue");
  send_depth_ = std::min<size_t>(send_depth, static_cast<size_t>(attr.max_qp_wr));
  size_t cqe = std::min<size_t>(cq_depth, static_cast<size_t>(attr.max_cqe));
  if (cqe <= rx_depth + send_depth_)
    cqe = std::min<size_t>(rx_depth + 2 * send_depth_, static_cast<size_t>(attr.max_cqe));
  if (cqe <= rx_depth)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT,
                "plugin parameter RX_DEPTH=" + std::to_string(rx_depth) +
                    " leaves no room in the " + std::to_string(cqe) +
                    "-entry completion queue of " + name_);
  send_budget_ = cqe - rx_depth;
  max_rd_atomic_ = static_cast<uint8_t>(std::min(attr.max_qp_init_rd_atom, 16));
  max_dest_rd_atomic_ = static_cast<uint8_t>(std::min(attr.max_qp_rd_atom, 16));

  errno = 0;
  if (!(pd_ = ibv_alloc_pd(ctx_))) fail("ibv_alloc_pd", errno);
  if (!(channel_ = ibv_create_comp_channel(ctx_))) fail("ibv_create_comp_channel", errno);
  // Non-blocking, so rearm() never waits: the progress thread polls the fd.
  int flags = fcntl(channel_->fd, F_GETFL);
  if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0)
    fail("fcntl on the completion channel", errno);
  if (!(cq_ = ibv_create_cq(ctx_, static_cast<int>(cqe), nullptr, channel_, 0)))
    fail("ibv_create_cq", errno);
  if (int rc = ibv_req_notify_cq(cq_, 0)) fail("ibv_req_notify_cq", rc);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = static_cast<uint32_t>(rx_depth);
  sa.attr.max_sge = 1;
  if (!(srq_ = ibv_create_srq(pd_, &sa))) fail("ibv_create_srq", errno);
}

// Connections' QPs and every memory registration must be gone first.
Device::~Device() { release(); }

void Device::release() noexcept {
  if (srq_) ibv_destroy_srq(srq_);
  srq_ = nullptr;
  if (cq_) {
    if (unacked_) ibv_ack_cq_events(cq_, unacked_);
    unacked_ = 0;
    ibv_destroy_cq(cq_);
  }
  cq_ = nullptr;
  if (channel_) ibv_destroy_comp_channel(channel_);
  channel_ = nullptr;
  if (pd_) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
}

void Device::rearm() {
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  bool got = false;
  while (ibv_get_cq_event(channel_, &cq, &cq_ctx) == 0) {
    ++unacked_;
    got = true;
  }
  // Acknowledging takes a lock inside libibverbs; batch it.
  if (unacked_ >= 64) {
    ibv_ack_cq_events(cq_, unacked_);
    unacked_ = 0;
  }
  if (got) ibv_req_notify_cq(cq_, 0);
}

}  // namespace caravan::van_verbs
