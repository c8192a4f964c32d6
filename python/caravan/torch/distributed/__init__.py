"""torch.distributed backend "caravan": collectives through Caravan's servers.

    import caravan.torch.distributed        # or: import byteps.torch
    dist.init_process_group("caravan")      # env://, tcp://, a store, or DMLC_*

Importing registers the backend (as Intel's oneccl_bindings_for_pytorch
registers "ccl"). The group joins the Caravan job DMLC_* describes
(caravan-launch, bpslaunch, ...), or brings one up itself through torch's
store under torchrun, with a server on every host (job.py). See
docs/torch-distributed.md for what each collective costs and what is
refused.
"""
import torch.distributed as dist

from . import job
from .process_group import ProcessGroupCaravan

BACKEND = "caravan"


def _create(store, rank, size, timeout):
    return ProcessGroupCaravan(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return  # imported twice (caravan.torch.distributed and byteps.torch)
    try:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda"])
    except TypeError:  # torch before 2.1 takes no devices
        dist.Backend.register_backend(BACKEND, _create)


_register()
job.fill_torch_environment()

__all__ = ["BACKEND", "ProcessGroupCaravan"]
