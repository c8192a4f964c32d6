"""DistributedDataParallel: a module whose backward averages its gradients.

Wrapping broadcasts the module's parameters and buffers from worker 0.
During backward, each parameter's gradient starts its push_pull as soon as
it is accumulated (earlier parameters with higher priority); when backward
ends, every gradient holds the average over all workers. Inside no_sync(),
gradients only accumulate locally; the first backward outside it, or
synchronize(), averages what was accumulated.
"""
import contextlib
import itertools

import torch

from . import ops
from ..errors import UnsupportedTensorError
from ._hooks import dense_gradient, on_gradient_accumulated
from .compression import Compression
from .functions import broadcast_parameters

_instances = itertools.count()


class DistributedDataParallel(torch.nn.Module):
    """`module` trained on every worker with averaged gradients.
    `broadcast_buffers`: buffers (e.g. BatchNorm statistics) are copied
    from worker 0 before each forward. `device_ids`: None, or the one CUDA
    device this worker drives (an index, "cuda:N" or a torch.device), kept
    as BytePS keeps it, a list of one index; the module's tensors are
    carried on whichever device (CPU or CUDA) they are. Wrap modules in the
    same order on every worker: the n-th wrapped module's tensors are named
    "DDP<n>." on the wire."""

    def __init__(self, module, device_ids=None, broadcast_buffers=True,
                 compression=Compression.none):
        super().__init__()
        if ops.async_mode():
            raise NotImplementedError(
                "DistributedDataParallel: asynchronous training (BYTEPS_ENABLE_ASYNC) is not "
                "supported (the servers would sum gradients over all steps); use "
                "DistributedOptimizer, or unset BYTEPS_ENABLE_ASYNC")
        self.device_ids = _device_indices(device_ids)
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        self._compression = compression
        self._prefix = "DDP%d." % next(_instances)
        named = list(module.named_parameters())
        self._synced = [(name, p) for name, p in named if p.requires_grad]
        self._priority = {id(p): -i for i, (_, p) in enumerate(named)}
        self._in_flight = {}  # id(p) -> (handle, compression context)
        self._callback_queued = False
        self._accumulated_locally = False  # by a backward inside no_sync(), not yet averaged
        broadcast_parameters(module.state_dict(), root_rank=0, prefix=self._prefix + "State.")
        self._name = {id(p): name for name, p in self._synced}
        self._hooks = [on_gradient_accumulated(p, self._gradient_accumulated)
                       for _, p in self._synced]

    def forward(self, *inputs, **kwargs):
        self._callback_queued = False  # in case a backward failed before its end
        if self.broadcast_buffers:
            buffers = list(self.module.named_buffers())
            if buffers:
                broadcast_parameters(buffers, root_rank=0, prefix=self._prefix + "Buffer.")
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside only accumulate gradients locally."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def synchronize(self):
        """Averages the gradients now, as BytePS's does: those accumulated
        inside no_sync() and not averaged since, and whatever is still in
        flight. BytePS asks for this call after backward in models whose
        branches leave some parameters without a gradient; here the end of
        every backward outside no_sync() already sends zeros for those and
        waits for every average, so it then has nothing left to do."""
        if self._in_flight or self._accumulated_locally:
            self._finish_backward()

    def _gradient_accumulated(self, p):
        dense_gradient(p)  # so that later passes accumulate into a dense one
        if not self.require_backward_grad_sync:
            self._accumulated_locally = True
            return
        if not self._callback_queued:
            self._callback_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._finish_backward)
        self._in_flight[id(p)] = self._start(self._name[id(p)], p)

    def _start(self, name, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        wire, ctx = self._compression.compress(dense_gradient(p))
        handle = ops.push_pull_async_inplace(wire, average=True,
                                             name=self._prefix + "Gradient." + name,
                                             priority=self._priority[id(p)])
        return handle, ctx

    def _finish_backward(self):
        """Runs when backward ends: parameters that got no gradient in this
        pass send zeros (another worker may have used them), then every
        average is waited for."""
        self._callback_queued = False
        self._accumulated_locally = False
        for name, p in self._synced:
            if id(p) not in self._in_flight:
                self._in_flight[id(p)] = self._start(name, p)
        for _, p in self._synced:
            handle, ctx = self._in_flight.pop(id(p))
            output = self._compression.decompress(ops.synchronize(handle), ctx)
            if output is not p.grad:
                p.grad.copy_(output)


def _device_indices(device_ids):
    """device_ids as BytePS keeps it: a list of one CUDA device index (None
    stays None: a CPU module)."""
    if device_ids is None:
        return None
    if isinstance(device_ids, (int, str, torch.device)) or len(device_ids) != 1:
        raise ValueError("DistributedDataParallel: device_ids must list exactly one CUDA device, "
                         "the one this worker process drives (as in BytePS), not %r" %
                         (device_ids,))
    device = device_ids[0]
    if isinstance(device, int) and not isinstance(device, bool):
        return [device]
    try:
        device = torch.device(device)
    except (TypeError, RuntimeError) as e:
        raise ValueError("DistributedDataParallel: device_ids[0] = %r is not a device: %s" %
                         (device_ids[0], e)) from e
    if device.type != "cuda":
        raise ValueError("DistributedDataParallel: device_ids[0] = %r is not a CUDA device "
                         "(leave device_ids out for a module on the %s)" %
                         (device_ids[0], device.type))
    return [torch.cuda.current_device() if device.index is None else device.index]
