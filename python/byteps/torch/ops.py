"""byteps.torch.ops on Caravan: the functions of caravan.torch.ops, under
every public name BytePS's ops.py has (its c_lib aside)."""
from caravan.torch.compression import Compression  # noqa: F401  (BytePS's ops has it)
from caravan.torch.ops import _PushPull as BytePSPushPull  # noqa: F401
from caravan.torch.ops import (byteps_torch_set_num_grads, declare, init,  # noqa: F401
                               local_rank, local_size, poll, push_pull, push_pull_async,
                               push_pull_async_inplace, push_pull_group_sync_inplace,
                               push_pull_inplace, rank, resume, shutdown, size, suspend,
                               synchronize)
