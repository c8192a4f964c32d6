"""byteps.torch.parallel on Caravan."""
from caravan.torch.parallel import DistributedDataParallel  # noqa: F401
