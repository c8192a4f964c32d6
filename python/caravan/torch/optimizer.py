"""DistributedOptimizer: averages gradients over all workers before each step.

Each parameter's gradient starts its push_pull ("Gradient." + name) from a
hook as soon as backward has accumulated it, every backward_passes_per_step
passes, so communication overlaps the rest of backward. Earlier parameters
(in the optimizer's order, which is the model's) get higher priority: the
next forward pass needs them first. step() waits only for what is still in
flight, puts the averages into p.grad and runs the wrapped optimizer's step.

With BYTEPS_ENABLE_ASYNC=1 (asynchronous training; servers add every push
into a store and answer with the store), gradients are not averaged: step()
runs the wrapped step on this worker's own gradients, pushes each
parameter's change ("AsyncParam." + name, summed, not averaged) and takes
the store, every worker's changes so far, as the new parameters. Worker 0's
parameters at the first step() are the store's starting point, and again
at the first step() after a resume() (the servers' stores do not outlive
a suspend).

compression_params (BytePS's dict: compressor, ef, momentum, k, scaling,
seed, partition, normalize, or byteps_* keys) declares every gradient with
those compression parameters: the engine compresses each partition before
the push and the server compresses the sum (docs/compression.md). With
momentum, the compressor applies Nesterov momentum before compressing
(mu from compression_params["mu"], else the optimizer's own momentum), and
the wrapped optimizer's momentum is set to 0 so it is not applied twice,
as BytePS does.

With CARAVAN_ELASTIC=1 a step whose push_pulls the job abandoned (it lost
a node) raises RegroupedError from backward(), synchronize() or step(); the
optimizer forgets that step's push_pulls, so that after rejoin() the step
can be done again (caravan.torch.elastic.run).
"""
import contextlib
import numbers
import warnings

import torch

from . import ops
from ..errors import RegroupedError
from ._hooks import dense_gradient, on_gradient_accumulated
from .collectives import Average, _check_op
from .compression import Compression, tensor_params


class _DistributedOptimizer:
    """Mixed in before the wrapped optimizer's own class."""

    def __init__(self, optimizer, named_parameters, compression, backward_passes_per_step,
                 compression_params=None, average=True):
        super().__init__(optimizer.param_groups)
        self._average = average
        self.state = optimizer.state  # keep what the optimizer has learnt so far
        self._compression = compression
        params = [p for group in self.param_groups for p in group["params"]]
        names = _parameter_names(params, named_parameters)
        self._synced = [p for p in params if p.requires_grad]
        self._name = {id(p): "Gradient." + names[id(p)] for p in self._synced}
        self._async_name = {id(p): "AsyncParam." + names[id(p)] for p in self._synced}
        self._async = ops.async_mode()
        self._seeded_in = None  # ops' joins when worker 0 seeded the stores
        self._priority = {id(p): -i for i, p in enumerate(params)}
        self._passes_left = {id(p): 0 for p in self._synced}
        self.set_backward_passes_per_step(backward_passes_per_step)
        self._in_flight = {}  # id(p) -> (handle, compression context)
        self._in_flight_joins = ops._session.joins  # the job's generation they belong to
        self._should_synchronize = True
        self._synchronized = False
        self._declare_compressed(compression_params, compression)
        self._hooks = [] if self._async else [
            on_gradient_accumulated(p, self._gradient_accumulated) for p in self._synced]

    def _declare_compressed(self, compression_params, compression):
        params = tensor_params(compression_params)
        if not params:
            return
        if compression is not Compression.none:
            raise ValueError("compression_params and compression=%s together: the engine's "
                             "compressors take the gradients as they are (float32, float64)"
                             % getattr(compression, "__name__", compression))
        if params.get("byteps_momentum_type", "none") != "none":
            momenta = {g.get("momentum") for g in self.param_groups}
            if "byteps_momentum_mu" not in params:
                if len(momenta) != 1 or not next(iter(momenta)):
                    raise ValueError("compression_params asks for momentum, but the optimizer "
                                     "has no single momentum to take mu from; give "
                                     "compression_params['mu']")
                params["byteps_momentum_mu"] = str(next(iter(momenta)))
            if any(momenta):
                warnings.warn("compression_params momentum: the compressor applies it, so the "
                              "optimizer's momentum is set to 0 (as BytePS does)")
                for g in self.param_groups:
                    if "momentum" in g:
                        g["momentum"] = 0
        for p in self._synced:
            ops.declare(self._name[id(p)], **params)

    def set_backward_passes_per_step(self, passes):
        """Changes backward_passes_per_step; the count starts again. Any
        whole number >= 1 will do (2, 2.0, numpy.int64(2), torch.tensor(2)),
        as BytePS only counts it down."""
        self.backward_passes_per_step = _whole_count(passes, "backward_passes_per_step")
        for key in self._passes_left:
            self._passes_left[key] = passes

    def _gradient_accumulated(self, p):
        key = id(p)
        if key in self._in_flight:
            raise AssertionError(
                "the gradient of '%s' was computed more than backward_passes_per_step=%d times "
                "before step() or synchronize(); raise backward_passes_per_step to accumulate "
                "more passes locally" % (self._name[key], self.backward_passes_per_step))
        dense_gradient(p)  # so that the next pass accumulates into a dense one
        self._passes_left[key] -= 1
        if self._passes_left[key] == 0:
            self._in_flight[key] = self._abandoning_on_regroup(self._start, p)

    def _abandoning_on_regroup(self, fn, *args):
        """fn(*args); after a regroup (now or since the push_pulls in
        flight started) that step's push_pulls are forgotten."""
        self._forget_other_generations()
        try:
            return fn(*args)
        except RegroupedError:
            self._abandon()
            raise

    def _forget_other_generations(self):
        if self._in_flight_joins != ops._session.joins:
            if self._in_flight:
                self._abandon()
            self._in_flight_joins = ops._session.joins

    def _abandon(self):
        self._in_flight.clear()
        self._in_flight_joins = ops._session.joins
        self._synchronized = False
        for key in self._passes_left:
            self._passes_left[key] = self.backward_passes_per_step

    def _start(self, p):
        key = id(p)
        if p.grad is None:  # not used this step here; maybe elsewhere: send zeros
            p.grad = torch.zeros_like(p)
        wire, ctx = self._compression.compress(dense_gradient(p))
        handle = ops.push_pull_async_inplace(wire, average=self._average, name=self._name[key],
                                             priority=self._priority[key])
        return handle, ctx

    def synchronize(self):
        """Waits for every gradient's push_pull (starting those whose hook
        has not run yet) and puts the averages into p.grad. Asynchronous
        training averages no gradients: nothing to do."""
        if self._async:
            return
        self._abandoning_on_regroup(self._synchronize)

    def _synchronize(self):
        for p in self._synced:
            if id(p) not in self._in_flight:
                self._in_flight[id(p)] = self._start(p)
        for p in self._synced:
            key = id(p)
            handle, ctx = self._in_flight.pop(key)
            output = self._compression.decompress(ops.synchronize(handle), ctx)
            if output is not p.grad:
                p.grad.copy_(output)
            self._passes_left[key] = self.backward_passes_per_step
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For a step() right after an explicit synchronize() (e.g. to clip
        the averaged gradients in between)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def _push_all(self, tensors):
        """push_pulls (summing) each of `tensors` under its parameter's
        AsyncParam name; returns the stores, in order."""
        handles = [ops.push_pull_async_inplace(t, average=False, name=self._async_name[id(p)],
                                               priority=self._priority[id(p)])
                   for p, t in zip(self._synced, tensors)]
        return [ops.synchronize(h) for h in handles]

    def _seed_store(self):
        """Worker 0 adds its parameters to the (empty) stores, the others
        nothing; a broadcast then holds everyone until worker 0's are in,
        so no worker starts from a store without them."""
        is_seed = ops.rank() == 0
        self._push_all([p.detach().clone() if is_seed else torch.zeros_like(p)
                        for p in self._synced])
        ops.broadcast_inplace(torch.zeros(1), root_rank=0, name="AsyncParam.seeded")
        self._seeded_in = ops._session.joins

    def _async_step(self, closure):
        if self._seeded_in != ops._session.joins:
            # First step, or the first since a resume(): the servers' stores
            # are new and empty.
            self._seed_store()
        before = [p.detach().clone() for p in self._synced]
        loss = super().step(closure)
        stores = self._push_all([p.detach() - old for p, old in zip(self._synced, before)])
        with torch.no_grad():
            for p, store in zip(self._synced, stores):
                p.copy_(store)
        return loss

    def step(self, closure=None):
        if self._async:
            return self._async_step(closure)
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called after optimizer.synchronize() without "
                              "'with optimizer.skip_synchronize():'; the gradients are averaged "
                              "a second time")
            self.synchronize()
        self._synchronized = False
        return super().step(closure)

    def zero_grad(self, *args, **kwargs):
        self._forget_other_generations()  # after a regroup, that step is void
        if self._in_flight:
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(): %d gradients are being averaged "
                "in place" % len(self._in_flight))
        return super().zero_grad(*args, **kwargs)


def _whole_count(value, what):
    """`value` as an int when it is a whole number >= 1, else ValueError."""
    if not isinstance(value, bool):
        try:
            if isinstance(value, torch.Tensor) and value.numel() == 1:
                value = value.item()
            if isinstance(value, numbers.Real) and value == int(value) and value >= 1:
                return int(value)
        except (ValueError, OverflowError):
            pass
    raise ValueError("%s must be a whole number >= 1, not %r" % (what, value))


def _parameter_names(params, named_parameters):
    """id(parameter) -> its name, for every parameter of the optimizer."""
    if named_parameters is None:
        return {id(p): "noname.%d" % i for i, p in enumerate(params)}
    named = list(named_parameters)
    for i, item in enumerate(named):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError(
                "named_parameters must be a sequence of (name, parameter) tuples, usually "
                "model.named_parameters(); item %d is %s" % (i, type(item).__name__))
    seen, duplicates = set(), set()
    for name, _ in named:
        (duplicates if name in seen else seen).add(name)
    if duplicates:
        raise ValueError("named_parameters has duplicate names: %s" %
                         ", ".join(sorted(duplicates)))
    names = {}
    for name, p in named:
        names.setdefault(id(p), name)
    # Only parameters that require gradients are pushed, so only they need a
    # name: fine-tuning scripts name the trainable ones alone, as BytePS allows.
    unnamed = [i for i, p in enumerate(params) if id(p) not in names and p.requires_grad]
    if unnamed:
        raise ValueError(
            "named_parameters was given but does not name %d of the optimizer's parameters "
            "that require gradients (positions %s in its param_groups)" %
            (len(unnamed), unnamed[:10]))
    return names


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, compression_params=None, op=Average):
    """Wraps `optimizer` so that step() uses gradients averaged over all
    workers. Returns an instance of a subclass of the optimizer's own class
    sharing its parameter groups and state. `named_parameters` (usually
    model.named_parameters()) names the gradients on the wire; every worker
    must use the same names. `compression`: Compression.none or .fp16.
    `backward_passes_per_step`: gradients are accumulated locally over this
    many backward passes before being averaged. `compression_params`:
    gradient compression in the engine, as BytePS's dict, e.g.
    {"compressor": "onebit", "ef": "vanilla", "scaling": True} or
    {"compressor": "topk", "k": 0.01, "ef": "vanilla"} (module docstring).
    `op`: Horovod's, Average (the default) or Sum (the gradients summed, not
    averaged), so that Horovod scripts that pass it run."""
    average = _check_op(op, "DistributedOptimizer")
    cls = type(optimizer.__class__.__name__, (_DistributedOptimizer, optimizer.__class__), {})
    return cls(optimizer, named_parameters, compression, backward_passes_per_step,
               compression_params, average)
