"""byteps.torch.ops on Caravan: the functions of caravan.torch.ops."""
from caravan.torch.compression import Compression  # noqa: F401  (BytePS's ops has it)
from caravan.torch.ops import (declare, init, local_rank, local_size, poll,  # noqa: F401
                               push_pull, push_pull_async, push_pull_async_inplace,
                               push_pull_inplace, rank, resume, shutdown, size, suspend,
                               synchronize)
