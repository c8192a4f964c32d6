// The optional local-group entries of the reducer table, over NCCL.
#ifndef CARAVAN_REDUCER_GPU_NCCL_GROUP_H
#define CARAVAN_REDUCER_GPU_NCCL_GROUP_H

#include <string>

#include "caravan/plugin/reducer_v1.h"

namespace caravan::reducer_gpu {

std::string nccl_version();

caravan_status local_id(void* ctx, void* id_out, size_t* id_len);
caravan_status local_join(void* ctx, const void* id, size_t id_len, int local_rank, int local_size,
                          void** group_out);
caravan_status local_leave(void* ctx, void* group);
caravan_status local_reduce(void* ctx, void* group, void* dst, const void* src, size_t count,
                            caravan_dtype dtype, int root, void* stream);
caravan_status local_broadcast(void* ctx, void* group, void* data, size_t count,
                               caravan_dtype dtype, int root, void* stream);

}  // namespace caravan::reducer_gpu

#endif  // CARAVAN_REDUCER_GPU_NCCL_GROUP_H
