"""byteps.torch on Caravan: the objects of caravan.torch under BytePS's names."""
from caravan.torch import *  # noqa: F401,F403
from caravan.torch import __all__  # noqa: F401
from . import parallel  # noqa: F401  (byteps.torch.parallel, not caravan.torch.parallel)
# BytePS's own alias, used by scripts written against its internals.
from caravan.torch.ops import push_pull_async_inplace as byteps_push_pull  # noqa: F401,E402
# The torch.distributed backend "caravan": BytePS scripts that also call
# init_process_group("caravan") need no other import.
import torch.distributed as _torch_distributed  # noqa: E402

if _torch_distributed.is_available():
    from caravan.torch import distributed as _caravan_backend  # noqa: F401,E402
