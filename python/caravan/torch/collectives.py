"""Horovod's collectives under Horovod's names: allgather, alltoall and
reducescatter, each with its _async form, whose handle poll() and
synchronize() take as push_pull's.

    out = bps.allgather(t, name="preds")       # first dimensions may differ
    out = bps.alltoall(t)                      # t.size(0) in equal parts
    out, got = bps.alltoall(t, splits=[1, 3])  # rows for rank 0, rank 1
    mine = bps.reducescatter(t, op=bps.Sum)    # rank r: its rows of the sum

They are made of push_pull and broadcast (plans.py, shared with the
torch.distributed backend); see docs/byteps-migration.md for what each
costs. An _async call starts the first operations at once; the rest (the
data, once every rank's shape is known) is started by a driver thread as
soon as they can be, whatever the order in which handles are waited for.
"""
import math
import threading
import time

import torch

from . import ops
from . import plans
from .compression import Compression

# Horovod's reduction ops (horovod.torch.Average, .Sum, .Adasum): the values
# are Horovod's. Adasum is named so that scripts that mention it import;
# the servers sum, so an operation asked to use it refuses (_check_op).
Average = 0
Sum = 1
Adasum = 2


class _Channel:
    """The operations of one call: the call's name plus a part."""

    def __init__(self, base):
        self.base = base
        self.rank = ops.rank()
        self.size = ops.size()

    def broadcast(self, tensor, root, part):
        return ops.broadcast_async_inplace(tensor, root, name=self.base + part)

    def push_pull(self, tensor, average, part):
        return ops.push_pull_async_inplace(tensor, average=average, name=self.base + part)

    def sharded(self, kind, tensor, part):
        return ops.sharded_async_inplace(kind, tensor, self.base + part)

    def alltoall(self, send, recv, part):
        return ops.alltoall_async_into(send, recv, self.base + part)


class PlanHandle(ops.Handle):
    """The handle of a collective made of several operations: poll() and
    synchronize() take it. Its steps after the first run on the driver
    thread."""

    def __init__(self, name, what, plan, finish):
        super().__init__(name, what, None, None, None, 1)
        self._plan = plan
        self._finish_with = finish  # plan's result -> what synchronize() returns
        self._event = threading.Event()
        if plan.done:
            self._conclude()
        else:
            _driver.add(self)

    def __repr__(self):
        state = "failed" if self._error else "done" if self._done else "in flight"
        return "<caravan.torch.Handle of %r, %s>" % (self.name, state)

    def _conclude(self, error=None):
        if error is None:
            try:
                self._output = self._finish_with(self._plan.result)
            except Exception as e:  # noqa: BLE001 - the caller's to hear of
                error = e
        self._error = error
        self._done = error is None
        self._plan = None
        self._event.set()

    def _poll(self):
        if self._event.is_set():
            if self._error is not None:
                raise self._error
            return True
        return False

    def _synchronize(self):
        self._event.wait()
        if self._error is not None:
            raise self._error
        return self._output


class _Driver:
    """One thread that takes the plans of PlanHandles forward: each as soon
    as the operations it waits for are done (polled, backing off to 1 ms
    while nothing moves), so that no order of waiting on the caller's side
    can hold one rank's next step behind another collective. Idle (no
    plan), it sleeps on its queue."""

    def __init__(self):
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._new = []
        self._thread = None

    def add(self, handle):
        with self._lock:
            self._new.append(handle)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="caravan-collectives",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self):
        pending = []
        delay = 0.0
        while True:
            with self._lock:
                while not pending and not self._new:
                    self._wake.wait()
                pending += self._new
                self._new = []
            moved = False
            for h in list(pending):
                try:
                    if not h._plan.step_if_ready():
                        continue
                    moved = True
                    if h._plan.done:
                        h._conclude()
                        pending.remove(h)
                except Exception as e:  # noqa: BLE001 - handed to the waiter
                    h._conclude(e)
                    pending.remove(h)
                    moved = True
            if moved:
                delay = 0.0
            elif pending:
                delay = min(max(delay * 2, 2e-5), 1e-3)
                time.sleep(delay)


_driver = _Driver()


def _start(kind, name, plan_of, finish=lambda result: result):
    """A PlanHandle for `plan_of(channel, what)`, named `name` (None: the
    next generated name of `kind`)."""
    name = ops._resolve_name(name, kind)
    what = "%s of tensor '%s'" % (kind, name)
    ops._require_init(what)
    plan = plans.Plan(plan_of(_Channel(kind + "." + name), what))
    return PlanHandle(name, what, plan, finish)


def _tensor(tensor, kind, name):
    ops._check_tensor(tensor, "%s of tensor '%s'" % (kind, name or "(unnamed)"), name)
    return tensor.detach()


# ---- allgather -----------------------------------------------------------------


def allgather_async(tensor, name=None):
    """Starts concatenating every rank's `tensor` along the first
    dimension, in rank order; returns a handle whose synchronize() gives the
    result. The first dimension may differ from rank to rank; the dtype and
    the other dimensions must agree (a disagreement raises MismatchError
    naming each rank's shape). Any dtype."""
    t = _tensor(tensor, "allgather", name)
    return _start("allgather", name, lambda ch, what: plans.allgather(ch, t, what))


def allgather(tensor, name=None):
    """allgather_async(), waited for: the concatenation."""
    return ops.synchronize(allgather_async(tensor, name))


# ---- alltoall ------------------------------------------------------------------


def alltoall_async(tensor, splits=None, name=None):
    """Starts sending rows of `tensor` (along the first dimension, in order)
    to every rank: splits[p] rows to rank p (a list or tensor of one count
    per rank; None: the first dimension in equal parts). synchronize()
    gives (the rows received, in rank order; how many from each rank, a
    tensor of splits' dtype, int32 when splits is not a tensor), as
    Horovod's. The dtype and the dimensions after the first must agree."""
    t = _tensor(tensor, "alltoall", name)
    dtype = splits.dtype if isinstance(splits, torch.Tensor) else torch.int32

    def finish(result):
        out, received = result
        return out, torch.tensor(received, dtype=dtype)

    return _start("alltoall", name, lambda ch, what: plans.alltoall(ch, t, splits, what),
                  finish)


def alltoall(tensor, splits=None, name=None):
    """alltoall_async(), waited for: the rows received, and with `splits`
    given, also how many rows came from each rank (Horovod's returns)."""
    out, received = ops.synchronize(alltoall_async(tensor, splits, name))
    return out if splits is None else (out, received)


# ---- reducescatter -------------------------------------------------------------


def _check_op(op, what):
    """Whether `op` averages; Average and Sum are the reductions offered."""
    if not isinstance(op, bool) and op == Adasum:
        raise ValueError("%s: op=Adasum: Caravan's servers sum, so it offers Average and Sum, "
                         "not Horovod's Adasum" % what)
    if isinstance(op, bool) or op not in (Average, Sum):
        raise ValueError("%s: op=%r; caravan.torch takes Average or Sum" % (what, op))
    return op == Average


def reducescatter_async(tensor, name=None, op=Average):
    """Starts summing `tensor` over the ranks (op=Average: then dividing by
    size(), integers by floor division) and hands each rank its rows of the
    result: of a first dimension of n rows, rank r gets n // size() rows,
    one more when r < n % size(), in rank order (Horovod's split).
    synchronize() gives this rank's rows. The shape and dtype must be the
    same on every rank, and a name keeps its shape (as push_pull's)."""
    what = "reducescatter of tensor '%s'" % (name or "(unnamed)")
    average = _check_op(op, what)
    t = _tensor(tensor, "reducescatter", name)
    if t.dim() == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to scatter along" % what)

    def plan(ch, what):
        whole = t.clone(memory_format=torch.contiguous_format).view(-1)
        rows = plans.split_rows(t.size(0), ch.size)
        row = math.prod(t.shape[1:])
        # Horovod's split may be uneven, and ranks with other first
        # dimensions are told by the servers: a push_pull of the whole.
        mine = yield from plans.reduce_scatter(ch, whole, average, [n * row for n in rows],
                                               shard=False)
        return mine.view((rows[ch.rank],) + tuple(t.shape[1:])).clone()

    return _start("reducescatter", name, plan)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average):
    """reducescatter_async(), waited for: this rank's rows of the reduction.
    The arguments are in Horovod's order; `compression` (Compression.fp16)
    sets what goes on the wire."""
    wire, ctx = compression.compress(tensor)
    return compression.decompress(ops.synchronize(reducescatter_async(wire, name, op)), ctx)
