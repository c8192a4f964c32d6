"""byteps.torch.cross_barrier on Caravan: byteps.torch's names and
CrossBarrier, as BytePS's example imports them
(`import byteps.torch.cross_barrier as bps`)."""
from caravan.torch import *  # noqa: F401,F403
from caravan.torch import __all__ as _torch_names
from caravan.torch.cross_barrier import CrossBarrier  # noqa: F401

__all__ = list(_torch_names) + ["CrossBarrier"]
