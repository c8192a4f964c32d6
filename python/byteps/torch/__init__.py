"""byteps.torch on Caravan: the objects of caravan.torch under BytePS's names."""
from caravan.torch import *  # noqa: F401,F403
from caravan.torch import __all__  # noqa: F401
from . import parallel  # noqa: F401  (byteps.torch.parallel, not caravan.torch.parallel)
# BytePS's own alias, used by scripts written against its internals.
from caravan.torch.ops import push_pull_async_inplace as byteps_push_pull  # noqa: F401,E402
