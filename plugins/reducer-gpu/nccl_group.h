// The NCCL the local group runs over (its entries are GpuReducer's members,
// in nccl_group.cc).
#ifndef CARAVAN_REDUCER_GPU_NCCL_GROUP_H
#define CARAVAN_REDUCER_GPU_NCCL_GROUP_H

#include <string>

namespace caravan::reducer_gpu {

std::string nccl_version();

}  // namespace caravan::reducer_gpu

#endif  // CARAVAN_REDUCER_GPU_NCCL_GROUP_H
