"""caravan.torch: BytePS's byteps.torch API over Caravan.

    import caravan.torch as bps      # or: import byteps.torch as bps
    bps.init()
    optimizer = bps.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    bps.broadcast_parameters(model.state_dict(), root_rank=0)
    bps.broadcast_optimizer_state(optimizer, root_rank=0)

Horovod's allgather, alltoall, reducescatter (each with _async), broadcast_,
broadcast_async_ and is_initialized are here too (collectives.py).

CPU and CUDA tensors of dtype float32, float64, float16, bfloat16, int32, int64,
uint8 and int8. The package is a thin layer over libcaravan's C API,
called through ctypes; see docs/byteps-migration.md.
"""
from ..errors import (CaravanError, MismatchError, NotInitializedError, RegroupedError,
                      UnsupportedTensorError)
from .collectives import (Adasum, Average, Sum, allgather, allgather_async, alltoall,
                          alltoall_async, reducescatter, reducescatter_async)
from .compression import Compression
from .functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters
from .ops import (Handle, broadcast, broadcast_, broadcast_async, broadcast_async_,
                  broadcast_async_inplace, broadcast_inplace, declare, get_pushpull_speed, init,
                  is_initialized, local_rank, local_size, poll, push_pull, push_pull_async,
                  push_pull_async_inplace, push_pull_inplace, pushpull_stats, rank, rejoin,
                  resume, shutdown, size, suspend, synchronize)
from .optimizer import DistributedOptimizer
from . import elastic, parallel

__all__ = [
    "CaravanError", "MismatchError", "NotInitializedError", "RegroupedError",
    "UnsupportedTensorError",
    "Compression", "broadcast_object", "broadcast_optimizer_state", "broadcast_parameters",
    "Handle", "broadcast", "broadcast_async", "broadcast_async_inplace", "broadcast_inplace",
    "declare", "get_pushpull_speed", "init", "local_rank", "local_size", "poll", "push_pull",
    "push_pull_async", "push_pull_async_inplace", "push_pull_inplace", "pushpull_stats", "rank",
    "rejoin", "resume", "shutdown", "size", "suspend", "synchronize", "DistributedOptimizer",
    "elastic", "parallel",
    # Horovod's names (horovod.torch)
    "Adasum", "Average", "Sum", "allgather", "allgather_async", "alltoall", "alltoall_async",
    "reducescatter", "reducescatter_async", "broadcast_", "broadcast_async_", "is_initialized",
]
