"""byteps.torch.ops on Caravan: the functions of caravan.torch.ops."""
from caravan.torch.ops import (declare, init, local_rank, local_size, poll,  # noqa: F401
                               push_pull, push_pull_async, push_pull_async_inplace,
                               push_pull_inplace, rank, shutdown, size, synchronize)
