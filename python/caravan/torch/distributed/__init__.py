"""torch.distributed backend "caravan": collectives through Caravan's servers.

    import caravan.torch.distributed        # or: import byteps.torch
    dist.init_process_group("caravan")      # env://, tcp://, a store, or DMLC_*

Importing registers the backend (as Intel's oneccl_bindings_for_pytorch
registers "ccl"). The group joins the Caravan job DMLC_* describes
(caravan-launch, bpslaunch, ...), or brings one up itself through torch's
store under torchrun, with a server on every host (job.py). See
docs/torch-distributed.md for what each collective costs and what is
refused.

torch's dist.monitored_barrier refuses every backend but gloo before it
reaches the group (torch 1.13 and 2.x alike); importing this module makes
it take groups of backend "caravan" to their own monitored_barrier (rank 0
names the ranks that did not arrive in time) and hands every other group
to torch's function unchanged.
"""
import functools

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


def _caravan_group(group):
    """The ProcessGroupCaravan `group` (None: the default group) is, or None."""
    if not dist.is_initialized():
        return None
    pg = dist.distributed_c10d._get_default_group() if group is None else group
    return pg if isinstance(pg, ProcessGroupCaravan) else None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """dist.monitored_barrier for a group of backend "caravan" (and torch's
    own for any other group): every rank waits until all arrived; if some
    rank does not arrive within `timeout` (default: the group's), rank 0
    raises naming it (all such ranks with wait_all_ranks=True) and the
    other ranks raise with rank 0's words."""
    pg = _caravan_group(group)
    if pg is None:
        return _torch_monitored_barrier(group=group, timeout=timeout,
                                        wait_all_ranks=wait_all_ranks)
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _take_over_monitored_barrier():
    global _torch_monitored_barrier
    original = dist.monitored_barrier
    if getattr(original, "_caravan", False):
        return

    @functools.wraps(original)
    def dispatch(group=None, timeout=None, wait_all_ranks=False):
        return monitored_barrier(group, timeout, wait_all_ranks)

    dispatch._caravan = True
    _torch_monitored_barrier = original
    dist.monitored_barrier = dist.distributed_c10d.monitored_barrier = dispatch


_torch_monitored_barrier = None
_register()
_take_over_monitored_barrier()
job.fill_torch_environment()

__all__ = ["BACKEND", "ProcessGroupCaravan", "monitored_barrier"]
