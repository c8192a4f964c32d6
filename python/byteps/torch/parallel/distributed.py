"""byteps.torch.parallel.distributed on Caravan: the module path BytePS's
DistributedDataParallel lives under."""
from caravan.torch.parallel import DistributedDataParallel  # noqa: F401
