// The local group over NCCL: one communicator per group, created
// non-blocking so that joining and leaving can give up after LOCAL_TIMEOUT_S
// instead of hanging on a worker that never came.
#include "nccl_group.h"

#include <nccl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "caravan/plugin/plugin_cxx.hpp"
#include "reducer.h"

namespace caravan::reducer_gpu {
namespace {

static_assert(sizeof(ncclUniqueId) <= CARAVAN_REDUCER_MAX_LOCAL_ID_V1,
              "an NCCL id fits the ABI's id buffer");

struct Group {
  ncclComm_t comm = nullptr;
  int rank = 0;
  int size = 0;
};

using Clock = std::chrono::steady_clock;

// Signed integers travel as their unsigned twins so that NCCL's sums wrap by
// definition rather than by signed overflow.
ncclDataType_t nccl_type(unsigned dt) {
  static const ncclDataType_t kTypes[CARAVAN_DTYPE_COUNT] = {ncclFloat32, ncclFloat64, ncclFloat16,
                                                             ncclUint8,   ncclUint32,  ncclUint8,
                                                             ncclUint64,  ncclBfloat16};
  return kTypes[dt];
}

std::string last_error(ncclComm_t comm) {
  const char* text = ncclGetLastError(comm);
  return text ? text : "";
}

// `detail` is ncclGetLastError's text, read before an abort can clear it.
[[noreturn]] void nccl_fail(ncclResult_t res, const std::string& detail, const std::string& what) {
  caravan_status status = CARAVAN_STATUS_INTERNAL;
  if (res == ncclInvalidArgument || res == ncclInvalidUsage)
    status = CARAVAN_STATUS_INVALID_ARGUMENT;
  if (res == ncclSystemError || res == ncclRemoteError) status = CARAVAN_STATUS_IO;
  throw Error(status, "gpu reducer: " + what + ": " + ncclGetErrorString(res) +
                          (detail.empty() ? "" : " (" + detail + ")"));
}

// A non-blocking communicator answers ncclInProgress until its last call is
// done on the host side; this polls until then or until the deadline.
ncclResult_t settle(ncclComm_t comm, ncclResult_t res, Clock::time_point deadline) {
  while (res == ncclInProgress) {
    if (Clock::now() >= deadline) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (ncclCommGetAsyncError(comm, &res) != ncclSuccess) return ncclInternalError;
  }
  return res;
}

Clock::time_point deadline_after(long long timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}

// reducer_cxx.hpp made sure it is not NULL.
Group& group_of(void* group) { return *static_cast<Group*>(group); }

void check_root(const Group& g, int root) {
  if (root < 0 || root >= g.size)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: root " + std::to_string(root) +
                                                     " is outside the local group of " +
                                                     std::to_string(g.size));
}

// Collectives only enqueue, so the deadline here covers NCCL's host-side
// work (the first call may connect the peers), not the transfer itself.
void enqueued(long long timeout_ms, Group& g, ncclResult_t res, const char* what) {
  res = settle(g.comm, res, deadline_after(timeout_ms));
  if (res == ncclInProgress)
    throw Error(CARAVAN_STATUS_TIMEOUT, std::string("gpu reducer: ") + what +
                                            " was not enqueued within " +
                                            std::to_string(timeout_ms / 1000) +
                                            " s; the local group is unusable and should be left");
  if (res != ncclSuccess) nccl_fail(res, last_error(g.comm), what);
}

}  // namespace

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "(unknown version)";
  // NCCL_VERSION's encoding: X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since.
  int major = v >= 10000 ? v / 10000 : v / 1000;
  int minor = v >= 10000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

void GpuReducer::local_id(void* id_out, size_t* id_len) {
  if (*id_len < sizeof(ncclUniqueId))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: local_id needs " +
                                                     std::to_string(sizeof(ncclUniqueId)) +
                                                     " bytes, got " + std::to_string(*id_len));
  DeviceScope scope(device_);
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) nccl_fail(res, last_error(nullptr), "ncclGetUniqueId");
  std::memcpy(id_out, &id, sizeof id);
  *id_len = sizeof id;
}

void* GpuReducer::local_join(const void* id, size_t id_len, int local_rank, int local_size) {
  if (id_len != sizeof(ncclUniqueId))
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: a local id is " +
                                                     std::to_string(sizeof(ncclUniqueId)) +
                                                     " bytes, got " + std::to_string(id_len));
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: local rank " +
                                                     std::to_string(local_rank) + " of " +
                                                     std::to_string(local_size) + " is not a rank");
  auto g = std::make_unique<Group>();
  g->rank = local_rank;
  g->size = local_size;
  ncclUniqueId unique;
  std::memcpy(&unique, id, sizeof unique);
  DeviceScope scope(device_);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  auto deadline = deadline_after(local_timeout_ms_);
  ncclResult_t res = ncclCommInitRankConfig(&g->comm, local_size, unique, local_rank, &config);
  if (g->comm) res = settle(g->comm, res, deadline);
  if (res != ncclSuccess) {
    std::string detail = last_error(g->comm);
    if (g->comm) ncclCommAbort(g->comm);
    if (res == ncclInProgress)
      // NCCL does not say who is missing; the ranks come from BYTEPS_LOCAL_*.
      throw Error(CARAVAN_STATUS_TIMEOUT,
                  "gpu reducer: the local group of " + std::to_string(local_size) +
                      " did not form within " + std::to_string(local_timeout_ms_ / 1000) +
                      " s (this is local rank " + std::to_string(local_rank) +
                      "; NCCL cannot tell which ranks are missing)");
    nccl_fail(res, detail, "ncclCommInitRankConfig");
  }
  return g.release();
}

void GpuReducer::local_leave(void* group) {
  std::unique_ptr<Group> g(&group_of(group));  // freed whatever happens below
  DeviceScope scope(device_);
  ncclResult_t res = settle(g->comm, ncclCommFinalize(g->comm), deadline_after(local_timeout_ms_));
  if (res != ncclSuccess) {
    std::string detail = last_error(g->comm);
    ncclCommAbort(g->comm);
    if (res == ncclInProgress)
      throw Error(CARAVAN_STATUS_TIMEOUT,
                  "gpu reducer: the local group's work did not finish within " +
                      std::to_string(local_timeout_ms_ / 1000) + " s; aborted it");
    nccl_fail(res, detail, "ncclCommFinalize");
  }
  res = ncclCommDestroy(g->comm);
  if (res != ncclSuccess) nccl_fail(res, "", "ncclCommDestroy");
}

void GpuReducer::local_reduce(void* group, void* dst, const void* src, size_t count,
                              caravan_dtype dtype, int root, void* stream) {
  Group& g = group_of(group);
  check_root(g, root);
  if (g.rank == root && !dst && count > 0)
    throw Error(CARAVAN_STATUS_INVALID_ARGUMENT, "gpu reducer: NULL dst on the root");
  if (count == 0) return;
  // dst is unused off the root, where the caller may pass NULL.
  void* recv = dst ? dst : const_cast<void*>(src);
  DeviceScope scope(device_);
  ncclResult_t res = ncclReduce(src, recv, count, nccl_type(dtype), ncclSum, root, g.comm,
                                static_cast<cudaStream_t>(stream));
  enqueued(local_timeout_ms_, g, res, "ncclReduce");
}

void GpuReducer::local_broadcast(void* group, void* data, size_t count, caravan_dtype dtype,
                                 int root, void* stream) {
  Group& g = group_of(group);
  check_root(g, root);
  if (count == 0) return;
  DeviceScope scope(device_);
  ncclResult_t res = ncclBroadcast(data, data, count, nccl_type(dtype), root, g.comm,
                                   static_cast<cudaStream_t>(stream));
  enqueued(local_timeout_ms_, g, res, "ncclBroadcast");
}

}  // namespace caravan::reducer_gpu
