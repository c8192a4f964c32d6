"""ProcessGroupCaravan: torch.distributed's collectives through Caravan.

A Python subclass of torch.distributed.ProcessGroup (no code compiled
against torch). Each collective starts Caravan operations at once (the
engine works while Python goes on) and returns a Work whose future a
completion thread fulfils, in order, once they are done: comm hooks and
async_op=True work, and every wait releases the GIL.

How each collective travels:
  all_reduce SUM, AVG     push_pull through the servers (each byte up and
                          down once, where a ring moves it 2(N-1)/N times)
  all_reduce PRODUCT, MIN, MAX, BAND, BOR, BXOR
                          an all_gather, then the reduction here: correct,
                          and N times the bytes of a SUM
  broadcast               the engine's broadcast (the root's bytes, relayed)
  all_gather(_into_tensor), gather
                          one broadcast from each rank
  reduce_scatter(_tensor), reduce
                          an all_reduce, each rank keeping its part
  all_to_all(_single), scatter
                          broadcasts from each rank, each keeping its part
  barrier                 a push_pull of one element
  send, recv              refused: point-to-point has no server to relay it
                          here; use a gloo group for them

Collectives carry no names, so each is named by its kind, dtype, element
count and a rolling slot: every rank issues the same collectives in the
same order (as torch requires), so the names agree, and a name is used
again (its keys on the servers kept) only after its previous operation
finished.
"""
import math
import queue
import sys
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import _create_work_from_future

from ...errors import CaravanError
from .. import ops
from . import job

_SLOTS = 64  # operations of one kind, dtype and size in flight before a name comes back


class _Work(dist._Work):
    """A collective in flight: waiting raises its error, get_future() is
    what DDP's comm hooks chain on."""

    def __init__(self, future):
        super().__init__()
        self._future = future

    def wait(self, timeout=None):
        self._future.wait()  # raises the collective's error
        return True

    def get_future(self):
        return self._future

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        if not self._future.done():
            return False
        try:
            self._future.value()
            return True
        except Exception:  # noqa: BLE001 - any failure of the collective
            return False


def _torch_calls_python_work():
    """Whether torch's C++ code reaches a Python Work subclass's methods
    (its PyWork trampoline; not in torch 1.13, where C++ sees only the base
    class, whose wait() never returns for a Python subclass)."""

    class Probe(dist._Work):
        def is_completed(self):
            return True

    return dist._Work.is_completed(Probe()) is True


_PYTHON_WORK_EVERYWHERE = _torch_calls_python_work()
_TORCH_API_FILE = dist.distributed_c10d.__file__.rstrip("c")


def _work_for(future, caller):
    """The Work to hand back. A _Work raises the collective's error from
    wait(); torch's own future-wrapping Work does not (it only records
    it), but torch's C++ code (DDP's parameter checks and broadcasts) can
    wait on it. Without the trampoline, the _Work goes to callers in
    Python (torch.distributed's functions), the other to C++."""
    if _PYTHON_WORK_EVERYWHERE or caller.f_code.co_filename.rstrip("c") == _TORCH_API_FILE:
        return _Work(future)
    return _create_work_from_future(future)


class _Completer:
    """One thread that finishes collectives in the order they were started:
    waits for their Caravan operations (without the GIL), runs what comes
    after (a copy, a local reduction), and fulfils their futures."""

    def __init__(self):
        self._queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="caravan-c10d", daemon=True)
        self._thread.start()

    def add(self, handles, then, result):
        future = torch.futures.Future()
        self._queue.put((handles, then, result, future))
        return future

    def _run(self):
        while True:
            handles, then, result, future = self._queue.get()
            try:
                for h in handles:
                    ops.synchronize(h)
                if then is not None:
                    then()
            except Exception as e:  # noqa: BLE001 - handed to the waiter
                future.set_exception(e)
                continue
            future.set_result(result)


class _Names:
    """The rolling names of unnamed collectives (see the module's words)."""

    def __init__(self, group):
        self._group = group
        # Collectives may come from the caller's thread and from autograd's
        # (DDP's comm hooks): one at a time here.
        self._lock = threading.Lock()
        self._count = {}
        self._last = {}  # name -> the future of the last operation under it

    def take(self, kind, tensor, extra=""):
        sig = (kind, str(tensor.dtype), tensor.numel(), extra)
        with self._lock:
            n = self._count.get(sig, 0)
            self._count[sig] = n + 1
            name = "c10d/%s/%s/%s/%d%s/%d" % (self._group, kind, str(tensor.dtype)[6:],
                                               tensor.numel(), extra, n % _SLOTS)
            previous = self._last.get(name)
        if previous is not None and not previous.done():
            try:
                previous.wait()
            except Exception:  # noqa: BLE001 - its own caller hears of it
                pass
        return name

    def started(self, names, future):
        with self._lock:
            for name in names:
                self._last[name] = future


_REDUCE_LOCALLY = {
    "PRODUCT": lambda a, b: a.mul_(b),
    "MIN": lambda a, b: torch.minimum(a, b, out=a),
    "MAX": lambda a, b: torch.maximum(a, b, out=a),
    "BAND": lambda a, b: a.bitwise_and_(b),
    "BOR": lambda a, b: a.bitwise_or_(b),
    "BXOR": lambda a, b: a.bitwise_xor_(b),
}


def _op_name(op):
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        if hasattr(dist.ReduceOp, name) and op == getattr(dist.ReduceOp, name):
            return name
    return str(op)


def _refuse(what, instead):
    raise CaravanError("caravan backend: %s is not supported; %s" % (what, instead))


class ProcessGroupCaravan(dist.ProcessGroup):
    """The default group of a job whose collectives go through Caravan."""

    _made = False

    def __init__(self, store, rank, size, timeout):
        if ProcessGroupCaravan._made:
            _refuse("a second group of backend 'caravan' in one process (dist.new_group)",
                    "make subgroups with backend='gloo'; the Caravan job is the default group")
        super().__init__(rank, size)
        job.join(store, rank, size, timeout)
        ProcessGroupCaravan._made = True
        self._rank, self._size = rank, size
        self._names = _Names("0")
        self._completer = _Completer()

    def getBackendName(self):
        return "caravan"

    def __repr__(self):
        return "ProcessGroupCaravan(rank=%d, size=%d)" % (self._rank, self._size)

    # ---- helpers ----------------------------------------------------------

    def _start(self, handles, names, then=None, result=None):
        """The future of operations started: done once `handles` are, and
        `then` has run; its value `result`."""
        future = self._completer.add(handles, then, result)
        self._names.started(names, future)
        return future

    @staticmethod
    def _work(future):
        # Frame 2: whoever called the collective method that calls this.
        return _work_for(future, sys._getframe(2))

    def _push_pull(self, tensor, kind, average):
        name = self._names.take(kind, tensor)
        return name, ops.push_pull_async_inplace(tensor, average=average, name=name)

    def _broadcast(self, tensor, root, kind, extra=""):
        name = self._names.take(kind, tensor, extra)
        return name, ops.broadcast_async_inplace(tensor, root, name=name)

    def _gather_all(self, outputs, tensor, kind):
        """outputs[r] <- rank r's `tensor` (same shape everywhere), by one
        broadcast from each rank; returns (names, handles)."""
        names, handles = [], []
        for r, out in enumerate(outputs):
            if r == self._rank:
                out.copy_(tensor)
            name, h = self._broadcast(out, r, kind, "/from%d" % r)
            names.append(name)
            handles.append(h)
        return names, handles

    # ---- collectives ------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        return self._work(self._allreduce(tensors, opts))

    def allreduce_coalesced(self, tensors, opts=None):
        return self._work(self._allreduce(tensors, opts))

    def _allreduce(self, tensors, opts):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if op in ("SUM", "AVG"):
            names, handles = [], []
            for t in tensors:
                name, h = self._push_pull(t, "allreduce", average=op == "AVG")
                names.append(name)
                handles.append(h)
            return self._start(handles, names, result=tensors)
        if op not in _REDUCE_LOCALLY:
            _refuse("all_reduce with ReduceOp.%s" % op, "use SUM, AVG, PRODUCT, MIN, MAX, BAND, "
                    "BOR or BXOR")
        names, handles, gathered = [], [], []
        for t in tensors:
            parts = [torch.empty_like(t) for _ in range(self._size)]
            n, h = self._gather_all(parts, t, "allreduce-" + op.lower())
            names += n
            handles += h
            gathered.append(parts)

        def reduce_here():
            for t, parts in zip(tensors, gathered):
                acc = parts[0].clone()
                for p in parts[1:]:
                    _REDUCE_LOCALLY[op](acc, p)
                t.copy_(acc)

        return self._start(handles, names, reduce_here, tensors)

    def broadcast(self, tensors, opts):
        names, handles = [], []
        for t in tensors:
            name, h = self._broadcast(t, opts.rootRank, "broadcast")
            names.append(name)
            handles.append(h)
        return self._work(self._start(handles, names, result=tensors))

    def allgather(self, output_tensors, input_tensors, opts=None):
        names, handles = [], []
        for outputs, t in zip(output_tensors, input_tensors):
            self._check_count(outputs, "all_gather's output list")
            n, h = self._gather_all(outputs, t, "allgather")
            names += n
            handles += h
        return self._work(self._start(handles, names, result=output_tensors))

    def _allgather_base(self, output, input, opts=None):
        if output.numel() != input.numel() * self._size:
            raise CaravanError("caravan backend: all_gather_into_tensor: the output has %d "
                               "elements, not %d x %d ranks" %
                               (output.numel(), input.numel(), self._size))
        parts = list(output.view(-1).chunk(self._size)) if output.is_contiguous() else None
        staging = None
        if parts is None:
            staging = torch.empty(output.numel(), dtype=output.dtype, device=output.device)
            parts = list(staging.chunk(self._size))
        names, handles = self._gather_all(parts, input.reshape(-1), "allgather-base")

        def copy_back():
            if staging is not None:
                output.copy_(staging.view(output.shape))

        return self._work(self._start(handles, names, copy_back, [output]))

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if op not in ("SUM", "AVG"):
            _refuse("reduce_scatter with ReduceOp.%s" % op, "use SUM or AVG")
        names, handles, pending = [], [], []
        for out, inputs in zip(output_tensors, input_tensors):
            self._check_count(inputs, "reduce_scatter's input list")
            whole = torch.cat([i.reshape(-1) for i in inputs])
            name, h = self._push_pull(whole, "reducescatter", average=op == "AVG")
            names.append(name)
            handles.append(h)
            sizes = [i.numel() for i in inputs]
            pending.append((out, whole, sizes))

        def keep_mine():
            for out, whole, sizes in pending:
                start = sum(sizes[:self._rank])
                out.copy_(whole[start:start + sizes[self._rank]].view(out.shape))

        return self._work(self._start(handles, names, keep_mine, output_tensors))

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if op not in ("SUM", "AVG"):
            _refuse("reduce_scatter_tensor with ReduceOp.%s" % op, "use SUM or AVG")
        if input.numel() != output.numel() * self._size:
            raise CaravanError("caravan backend: reduce_scatter_tensor: the input has %d "
                               "elements, not %d x %d ranks" %
                               (input.numel(), output.numel(), self._size))
        whole = input.detach().reshape(-1).clone()
        name, h = self._push_pull(whole, "reducescatter-base", average=op == "AVG")
        n = output.numel()

        def keep_mine():
            output.copy_(whole[self._rank * n:(self._rank + 1) * n].view(output.shape))

        return self._work(self._start([h], [name], keep_mine, [output]))

    def reduce(self, tensors, opts):
        # Every rank gets the result; torch leaves the others' unspecified.
        all_opts = dist.AllreduceOptions()
        all_opts.reduceOp = opts.reduceOp
        return self._work(self._allreduce(tensors, all_opts))

    def gather(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        gathered = [torch.empty_like(input_tensors[0]) for _ in range(self._size)]
        names, handles = self._gather_all(gathered, input_tensors[0], "gather")

        def to_root():
            if self._rank == root:
                for out, g in zip(output_tensors[0], gathered):
                    out.copy_(g)

        return self._work(self._start(handles, names, to_root, output_tensors))

    def scatter(self, output_tensors, input_tensors, opts):
        root = opts.rootRank
        out = output_tensors[0]
        names, handles, parts = [], [], []
        for r in range(self._size):
            part = input_tensors[0][r].clone() if self._rank == root else torch.empty_like(out)
            name, h = self._broadcast(part, root, "scatter", "/to%d" % r)
            names.append(name)
            handles.append(h)
            parts.append(part)

        def keep_mine():
            out.copy_(parts[self._rank])

        return self._work(self._start(handles, names, keep_mine, output_tensors))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return self._work(self._alltoall_flat(output, input, output_split_sizes,
                                              input_split_sizes))

    def _alltoall_flat(self, output, input, output_split_sizes, input_split_sizes):
        n = self._size
        in_splits = list(input_split_sizes) or [input.size(0) // n] * n
        out_splits = list(output_split_sizes) or [output.size(0) // n] * n
        # Every rank's split sizes, so each knows how much every other sends.
        mine = torch.tensor(in_splits, dtype=torch.int64)
        all_splits = [torch.empty_like(mine) for _ in range(n)]
        names, handles = self._gather_all(all_splits, mine, "alltoall-splits")
        for h in handles:  # needed before anything else can start
            ops.synchronize(h)
        row = math.prod(input.shape[1:])  # elements per index of dim 0
        inputs = [torch.empty(int(s.sum()) * row, dtype=input.dtype, device=input.device)
                  for s in all_splits]
        names, handles = [], []
        for r in range(n):
            if r == self._rank:
                inputs[r].copy_(input.reshape(-1))
            name, h = self._broadcast(inputs[r], r, "alltoall", "/from%d" % r)
            names.append(name)
            handles.append(h)

        def keep_mine():
            pieces = []
            for r in range(n):
                splits = all_splits[r].tolist()
                start = sum(splits[:self._rank]) * row
                pieces.append(inputs[r][start:start + splits[self._rank] * row])
            got = torch.cat(pieces)
            if got.numel() != sum(out_splits) * row:
                raise CaravanError("caravan backend: all_to_all_single: this rank receives %d "
                                   "elements, its output has room for %d" %
                                   (got.numel(), sum(out_splits) * row))
            output.copy_(got.view(output.shape))

        return self._start(handles, names, keep_mine, [output])

    def alltoall(self, output_tensors, input_tensors, opts=None):
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        in_sizes = [t.numel() for t in input_tensors]
        out_sizes = [t.numel() for t in output_tensors]
        flat_out = torch.empty(sum(out_sizes), dtype=flat_in.dtype, device=flat_in.device)
        work = self._alltoall_flat(flat_out, flat_in, out_sizes, in_sizes)

        def scatter_back(fut):
            fut.value()  # raises the collective's error
            offset = 0
            for t, size in zip(output_tensors, out_sizes):
                t.copy_(flat_out[offset:offset + size].view(t.shape))
                offset += size
            return output_tensors

        return _work_for(work.then(scatter_back), sys._getframe(1))

    def barrier(self, opts=None):
        token = torch.zeros(1, dtype=torch.int32)
        name, h = self._push_pull(token, "barrier", average=False)
        return self._work(self._start([h], [name], result=[token]))

    def send(self, tensors, dst, tag=0):
        _refuse("send", "point-to-point has no server to relay it here; use a gloo group "
                "(dist.new_group(backend='gloo')) for send and recv")

    def recv(self, tensors, src, tag=0):
        _refuse("recv", "point-to-point has no server to relay it here; use a gloo group "
                "(dist.new_group(backend='gloo')) for send and recv")

    def recv_anysource(self, tensors, tag=0):
        self.recv(tensors, -1, tag)

    def _check_count(self, tensors, what):
        if len(tensors) != self._size:
            raise CaravanError("caravan backend: %s has %d tensors, not one per rank (%d)" %
                               (what, len(tensors), self._size))
