"""Tensors in and out of Caravan: init, push_pull, broadcast and their handles.

A tensor goes to the C API as its address (`data_ptr()`), element count and
caravan_dtype; the engine sums (push_pull) or copies (broadcast) in place.
A CUDA tensor goes to the device calls (C API 1.2) with the current CUDA
stream of its device: the engine starts after the work queued there, and
synchronize() returns once the result is on the device.
Python only stages copies where the engine needs contiguous memory, keeps
every buffer alive until its handle is synchronized, and divides by size()
when asked to average.
"""
import atexit
import ctypes
import itertools
import os
import sys
import threading
import time

import torch

from .. import _capi
from ..errors import (ERR_REGROUPED, CaravanError, NotInitializedError, RegroupedError,
                      UnsupportedTensorError)
from .compression import Compression, param_text

# torch dtype -> caravan_dtype: every element type Caravan and torch share.
_CARAVAN_DTYPES = {
    torch.float32: _capi.FLOAT32,
    torch.float64: _capi.FLOAT64,
    torch.float16: _capi.FLOAT16,
    torch.bfloat16: _capi.BFLOAT16,
    torch.int32: _capi.INT32,
    torch.int64: _capi.INT64,
    torch.uint8: _capi.UINT8,
    torch.int8: _capi.INT8,
}
_DTYPE_LIST = "float32, float64, float16, bfloat16, int32, int64, uint8, int8"


class _Session:
    """What this process knows of the job between init() and shutdown()."""

    def __init__(self):
        self.lock = threading.Lock()
        self.initialized = False
        self.size = 0
        self.in_flight = set()  # Handles not yet synchronized: they keep their buffers alive
        self.unnamed = {kind: itertools.count() for kind in
                        ("push_pull", "broadcast", "allgather", "alltoall", "reducescatter")}
        self.dying_of_exception = False
        self.group_size = 0  # push_pull_group_sync_inplace's count: its position
        self.group_count = 0  # among byteps_torch_set_num_grads' gradients
        self.atexit_registered = False
        self.suspended = False
        self.joins = 0  # init() and resume() calls: the servers are new after each
        self.shape_when_suspended = {}  # caravan_rank ... caravan_local_size, as suspend() left
        self.declared = {}  # name -> declare()'s parameters, in first order, for resume()

    def restart_names(self):
        self.unnamed = {kind: itertools.count() for kind in self.unnamed}


_session = _Session()


def _require_init(what):
    if not _session.initialized:
        raise NotInitializedError(
            "%s: caravan.torch.init() has not been called (or shutdown() was)" % what)


def _watch_uncaught_exceptions():
    """At exit, shutdown() waits at a barrier for every worker. A process
    dying of an uncaught exception leaves without it, so that the others
    learn at once that it failed instead of waiting for it."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        _session.dying_of_exception = True
        previous(kind, value, tb)

    sys.excepthook = hook


def _shutdown_at_exit():
    if _session.initialized and not _session.dying_of_exception:
        try:
            shutdown()
        except CaravanError as e:
            print("caravan.torch: shutdown at exit failed: %s" % e, file=sys.stderr)


def init(lazy=True):
    """Joins the job the environment (DMLC_*, BYTEPS_*) describes, as a
    worker. Blocks until every worker and server has joined (up to
    CARAVAN_CONNECT_TIMEOUT seconds). A second call does nothing. `lazy`
    is accepted for BytePS compatibility and ignored. shutdown() is called
    at exit if the program does not call it."""
    with _session.lock:
        if _session.initialized:
            return
        _capi.call("caravan_init", what="caravan.torch.init()")
        _session.size = _capi.call("caravan_size", what="caravan.torch.init()")
        _session.initialized = True
        _session.joins += 1
        if not _session.atexit_registered:
            _session.atexit_registered = True
            _watch_uncaught_exceptions()
            atexit.register(_shutdown_at_exit)


def shutdown():
    """Waits for this worker's operations in flight and leaves the job (a
    barrier with every other worker). Handles not synchronized by then
    become invalid."""
    with _session.lock:
        if not _session.initialized and _session.atexit_registered:
            return  # shut down already: a second call is harmless, as in BytePS
        _leave("caravan_shutdown", "shutdown()")


def _leave(function, what):
    """shutdown() and suspend(), with the session's lock held."""
    _require_init("caravan.torch." + what)
    _session.initialized = False
    orphans, _session.in_flight = _session.in_flight, set()
    try:
        _capi.call(function, what="caravan.torch." + what)
    finally:
        for h in orphans:
            h._fail(NotInitializedError(
                "%s: %s was called before the handle was synchronized" % (h._what, what),
                tensor_name=h.name))


def is_initialized():
    """Whether init() has been called (and shutdown() not since), as
    Horovod's is_initialized()."""
    return _session.initialized


def _query(fn, what):
    if _session.suspended:
        # As BytePS's: between suspend() and resume() the job's shape is
        # the one this worker left (scripts log with local_rank() there).
        return _session.shape_when_suspended[fn]
    _require_init(what)
    return _capi.call(fn, what=what)


def rank():
    """This worker's rank, 0 to size() - 1 (DMLC_WORKER_ID x local_size()
    + local_rank())."""
    return _query("caravan_rank", "caravan.torch.rank()")


def size():
    """The number of worker processes in the job."""
    return _query("caravan_size", "caravan.torch.size()")


def local_rank():
    """This process's index among the workers of its machine (BYTEPS_LOCAL_RANK)."""
    return _query("caravan_local_rank", "caravan.torch.local_rank()")


def local_size():
    """The number of worker processes on this machine (BYTEPS_LOCAL_SIZE)."""
    return _query("caravan_local_size", "caravan.torch.local_size()")


def declare(name, **kwargs):
    """Declares a tensor name before its first push_pull, with its
    compression parameters as BytePS takes them (byteps_compressor_type=
    "onebit", byteps_compressor_k=0.01, byteps_error_feedback_type=
    "vanilla", ...; docs/compression.md): every worker must give the same.
    BytePS fixes the tensor's key here; Caravan derives keys from names, so
    without parameters this only checks the name. Returns 0, as BytePS's."""
    _check_name(name, "caravan.torch.declare()")
    if not kwargs:
        return 0
    _require_init("caravan.torch.declare()")
    _session.declared.setdefault(name, dict(kwargs))
    keys = [k.encode("utf-8") for k in kwargs]
    values = [param_text(v).encode("utf-8") for v in kwargs.values()]
    _capi.call("caravan_declare_tensor", name.encode("utf-8"),
               (ctypes.c_char_p * len(keys))(*keys), (ctypes.c_char_p * len(values))(*values),
               len(keys), what="caravan.torch.declare(%r)" % name, tensor_name=name)
    return 0


def suspend():
    """BytePS's suspend(), for elastic training: waits for this worker's
    operations in flight and leaves the job at a barrier of every node, as
    shutdown() does, but the servers and the scheduler stay up (up to
    CARAVAN_RESUME_TIMEOUT seconds, default 600) for the workers to
    resume() it, with the same or other counts. A worker that shuts down
    instead leaves the job. Until resume(), rank(), size(), local_rank()
    and local_size() answer as before the suspend, as BytePS's do.
    docs/elastic.md."""
    with _session.lock:
        _require_init("caravan.torch.suspend()")
        shape = {fn: _capi.call(fn, what="caravan.torch.suspend()") for fn in
                 ("caravan_rank", "caravan_size", "caravan_local_rank", "caravan_local_size")}
        _leave("caravan_suspend", "suspend()")
        _session.suspended = True
        _session.shape_when_suspended = shape


def resume(num_workers, num_servers, global_rank=None, context=None):
    """BytePS's resume(): joins the suspended job again, now of
    `num_workers` machines and `num_servers` servers (set as DMLC_NUM_WORKER
    and DMLC_NUM_SERVER in this process, as BytePS does). `global_rank` asks
    for a rank (None: the one this worker had); one that another worker
    holds, or beyond the new size, is given up for a free one, with a
    warning, so rank() is the answer. Tensors start again from their first
    round (unnamed ones from their first name), and every tensor declared
    with compression parameters is declared again, in its first order.
    `context` is accepted for BytePS compatibility and ignored, as there."""
    with _session.lock:
        if _session.initialized:
            raise CaravanError("caravan.torch.resume(): this worker is in the job; "
                               "call suspend() first")
        if not _session.suspended:
            raise CaravanError("caravan.torch.resume(): suspend() was not called")
        rank = -1 if global_rank is None else int(global_rank)
        _capi.call("caravan_resume", int(num_workers), int(num_servers), rank,
                   what="caravan.torch.resume(%d, %d, %r)" % (num_workers, num_servers,
                                                               global_rank))
        _session.suspended = False
        declared = _joined_again("caravan.torch.resume()")
    _declare_again(declared)


def _joined_again(what):
    """After resume() or rejoin(), with the session's lock held: the new
    size, the names restarted; returns the declarations to make again."""
    _session.size = _capi.call("caravan_size", what=what)
    _session.initialized = True
    _session.joins += 1
    _session.restart_names()
    return list(_session.declared.items())


def _declare_again(declared):
    for name, params in declared:
        declare(name, **params)


def rejoin():
    """After a RegroupedError (CARAVAN_ELASTIC=1: the job lost a worker or
    a server and goes on without it): leaves the ended generation of the
    job and joins the next, with the nodes left. rank() and size() may
    change. Operations not yet synchronized fail with RegroupedError;
    tensors start again from their first round (unnamed ones from their
    first name), and declared tensors are declared again. Every worker must
    then redo the step in flight from the same parameters:
    caravan.torch.elastic.run does all this. docs/elastic.md."""
    with _session.lock:
        _require_init("caravan.torch.rejoin()")
        orphans, _session.in_flight = _session.in_flight, set()
        try:
            # First: the old generation's worker is gone once this returns,
            # so nothing reads or writes the orphans' buffers any more.
            _capi.call("caravan_rejoin", what="caravan.torch.rejoin()")
        except CaravanError:
            _session.initialized = False
            raise
        finally:
            for h in orphans:
                h._fail(RegroupedError("%s: the job regrouped before it was synchronized" %
                                       h._what, code=ERR_REGROUPED, tensor_name=h.name))
        declared = _joined_again("caravan.torch.rejoin()")
    _declare_again(declared)


def async_mode():
    """True when BYTEPS_ENABLE_ASYNC asks for asynchronous training: the
    servers then add every push into a store and answer with the store."""
    return os.environ.get("BYTEPS_ENABLE_ASYNC", "").strip() not in ("", "0")


def get_pushpull_speed():
    """(milliseconds since the epoch, MB/s): the push_pull throughput of this
    worker over the last telemetry window (CARAVAN_TELEMETRY_WINDOW_S, default
    10 s), as BytePS returns it. pushpull_stats() has the latencies too."""
    _require_init("caravan.torch.get_pushpull_speed()")
    return int(time.time() * 1000), _capi.pushpull_stats().mbytes_per_s


def pushpull_stats(name=None):
    """Telemetry of tensor `name`, or of every tensor: a dict of window_s,
    operations, bytes, mbytes_per_s, p50_us, p90_us, p99_us."""
    _require_init("caravan.torch.pushpull_stats()")
    s = _capi.pushpull_stats(name)
    return {f: getattr(s, f) for f, _ in s._fields_ if f != "struct_size"}


# ---- tensors ---------------------------------------------------------------


def _check_name(name, what):
    if not isinstance(name, str) or not name:
        raise TypeError("%s: a tensor name must be a non-empty str, not %r" % (what, name))


def _resolve_name(name, kind):
    """The name given, or the next generated one. Unnamed operations are
    numbered per process and kind in call order ("push_pull.noname.0", ...),
    so they agree across workers that make them in the same order. Every
    generated name is a new tensor for the engine: name tensors you send
    more than once."""
    if name is None:
        with _session.lock:
            return "%s.noname.%d" % (kind, next(_session.unnamed[kind]))
    _check_name(name, "caravan.torch.%s" % kind)
    return name


def _check_tensor(tensor, what, name):
    if not isinstance(tensor, torch.Tensor):
        raise UnsupportedTensorError("%s: expected a torch.Tensor, got %s" %
                                     (what, type(tensor).__name__), tensor_name=name)
    device = tensor.device
    if device.type not in ("cpu", "cuda"):
        raise UnsupportedTensorError(
            "%s: the tensor is on device '%s'; caravan.torch carries CPU and CUDA tensors" %
            (what, device), tensor_name=name)
    if tensor.layout != torch.strided:
        raise UnsupportedTensorError(
            "%s: the tensor's layout is %s; caravan.torch carries dense (strided) tensors only" %
            (what, tensor.layout), tensor_name=name)


def _caravan_dtype(tensor, what, name):
    dtype = _CARAVAN_DTYPES.get(tensor.dtype)
    if dtype is None:
        raise UnsupportedTensorError(
            "%s: dtype %s is not one Caravan can sum (%s)" % (what, tensor.dtype, _DTYPE_LIST),
            tensor_name=name)
    return dtype


class Handle:
    """An operation in flight, for poll() and synchronize(). It holds the
    tensors the engine reads and writes until it is synchronized."""

    def __init__(self, name, what, buffer, output, copy_back, divisor):
        self.name = name
        self._what = what
        self._c = None  # the C handle; None once released
        self._buffer = buffer  # contiguous memory the engine works on
        self._output = output  # what synchronize() returns
        self._copy_back = copy_back  # a non-contiguous target to fill from buffer
        self._divisor = divisor  # average: size(), else 1
        self._error = None
        self._done = False

    def __repr__(self):
        state = "failed" if self._error else "done" if self._done else "in flight"
        return "<caravan.torch.Handle of %r, %s>" % (self.name, state)

    def _fail(self, error):
        self._c = None
        self._error = error
        self._buffer = self._output = self._copy_back = None

    def _poll(self):
        if self._error is not None:
            raise self._error
        if self._done or self._c is None:
            return True
        try:
            if _capi.poll(self._c, self._what, self.name) != 1:
                return False
        except CaravanError as e:
            _forget(self, e)
            raise
        # Done: finish now, so that an in-place tensor read after poll() is
        # already averaged, as in BytePS (it divides before marking the
        # handle done). The wait returns at once.
        _complete(self)
        return True

    def _synchronize(self):
        if self._error is not None:
            raise self._error
        if not self._done:
            _complete(self)
        return self._output

    def _finish(self):
        buffer = self._buffer
        if self._divisor > 1:
            if buffer.is_floating_point():
                buffer.div_(self._divisor)
            else:
                buffer.div_(self._divisor, rounding_mode="floor")
        if self._copy_back is not None:
            self._copy_back.copy_(buffer)
        self._done = True
        self._buffer = self._copy_back = None


def _start(c_function, tensor, name, what, inplace, divisor, extra_args, dtype, count=None,
           blocking=False):
    """Stages `tensor` and starts `c_function` (an *_async C function) on
    it. In place: the engine works on the tensor itself when contiguous,
    else on a contiguous copy that synchronize() copies back. Otherwise on
    a contiguous copy, which is the output. `blocking`: runs the C
    function's blocking form instead and returns a handle already done:
    one call into the library instead of two, which is most of what the
    layer adds to a small tensor's round trip."""
    target = tensor.detach()  # same memory; no autograd record of our writes
    if not inplace:
        buffer = target.clone(memory_format=torch.contiguous_format)
        output, copy_back = buffer, None
    elif target.is_contiguous():
        buffer, output, copy_back = target, tensor, None
    else:
        buffer, output, copy_back = target.contiguous(), tensor, target
    handle = Handle(name, what, buffer, output, copy_back, divisor)
    if buffer.numel() == 0:
        handle._done = True  # nothing to carry; the engine refuses empty tensors
        return handle
    args = (name.encode("utf-8"), buffer.data_ptr(), buffer.numel() if count is None else count,
            dtype) + tuple(extra_args)
    if buffer.is_cuda:
        # Ordered after the work queued so far on the tensor's current stream.
        c_function = c_function.replace("_async", "_device_async")
        args += (torch.cuda.current_stream(buffer.device).cuda_stream,)
    if blocking:
        _capi.call(c_function[:-len("_async")], *args, what=what, tensor_name=name)
        handle._finish()
        return handle
    handle._c = _capi.start(c_function, *args, what=what, tensor_name=name)
    with _session.lock:
        _session.in_flight.add(handle)
    return handle


def _push_pull_start(tensor, average, name, priority, inplace, blocking=False):
    name = _resolve_name(name, "push_pull")
    what = "push_pull of tensor '%s'" % name
    _check_tensor(tensor, what, name)
    dtype = _caravan_dtype(tensor, what, name)
    _require_init(what)
    divisor = _session.size if average else 1
    return _start("caravan_push_pull_async", tensor, name, what, inplace, divisor,
                  (int(priority),), dtype, blocking=blocking)


def push_pull_async(tensor, average=True, name=None, version=0, priority=0):
    """Starts summing `tensor` over all workers (divided by size() if
    `average`; integer tensors by floor division) into a new tensor;
    returns a handle for poll() and synchronize(). `name` must be the same
    on every worker (None: a generated name, see the docs); higher
    `priority` is sent first. `version` is accepted for BytePS
    compatibility and ignored."""
    return _push_pull_start(tensor, average, name, priority, inplace=False)


def push_pull_async_inplace(tensor, average=True, name=None, version=0, priority=0):
    """As push_pull_async(), writing the result into `tensor`."""
    return _push_pull_start(tensor, average, name, priority, inplace=True)


def byteps_torch_set_num_grads(num_grads):
    """BytePS's: how many calls of push_pull_group_sync_inplace make a
    group (its DistributedDataParallel's gradients); the count starts
    again. Returns 0."""
    with _session.lock:
        _session.group_size, _session.group_count = int(num_grads), 0
    return 0


def push_pull_group_sync_inplace(tensor, average=True, name=None, version=0, priority=0):
    """BytePS's: push_pull_async_inplace(), and the call's position in its
    group of byteps_torch_set_num_grads() calls (1 to that number, then 1
    again); returns (handle, position)."""
    handle = push_pull_async_inplace(tensor, average, name, version, priority)
    with _session.lock:
        _session.group_count += 1
        position = _session.group_count
        if position == _session.group_size:
            _session.group_count = 0
    return handle, position


class _PushPull(torch.autograd.Function):
    """push_pull as a differentiable operation: the gradient of the average
    (or sum) over workers is the average (or sum) of the gradients. The
    arguments are BytePS's (its BytePSPushPull, which byteps.torch.ops
    hands out as this class)."""

    @staticmethod
    def forward(ctx, tensor, average, name, version, priority):
        ctx.average, ctx.name, ctx.priority = average, name, priority
        return synchronize(push_pull_async(tensor, average, name, version, priority))

    @staticmethod
    def backward(ctx, grad_output):
        grad = push_pull(grad_output, ctx.average, ctx.name, 0, ctx.priority)
        return grad, None, None, None, None


def push_pull(tensor, average=True, name=None, version=0, priority=0,
              compression=Compression.none):
    """Sums `tensor` over all workers and returns the result as a new
    tensor (averaged if `average`). `compression` (Compression.none or
    Compression.fp16) sets what goes on the wire. Differentiable: when
    `tensor` requires grad, backward push_pulls the gradient under the same
    name."""
    _check_tensor(tensor, "push_pull of tensor '%s'" % (name or "(unnamed)"), name)
    wire, ctx = compression.compress(tensor)
    if wire.requires_grad and torch.is_grad_enabled():
        name = _resolve_name(name, "push_pull")
        return compression.decompress(_PushPull.apply(wire, average, name, version, priority), ctx)
    # A compressor that made a new tensor lets us work on it in place.
    return compression.decompress(
        synchronize(_push_pull_start(wire, average, name, priority, inplace=wire is not tensor,
                                     blocking=True)), ctx)


def push_pull_inplace(tensor, average=True, name=None, version=0, priority=0):
    """Sums `tensor` over all workers in place and returns it."""
    return synchronize(_push_pull_start(tensor, average, name, priority, inplace=True,
                                        blocking=True))


def _broadcast_start(tensor, root_rank, name, priority, inplace, blocking=False):
    name = _resolve_name(name, "broadcast")
    what = "broadcast of tensor '%s' from rank %s" % (name, root_rank)
    _check_tensor(tensor, what, name)
    if not isinstance(root_rank, int) or isinstance(root_rank, bool):
        raise TypeError("%s: root_rank must be an int, not %r" % (what, root_rank))
    _require_init(what)
    # A broadcast copies bytes: a dtype Caravan cannot sum travels as bytes.
    dtype = _CARAVAN_DTYPES.get(tensor.dtype)
    count = None
    if dtype is None:
        dtype, count = _capi.UINT8, tensor.numel() * tensor.element_size()
    return _start("caravan_broadcast_async", tensor, name, what, inplace, 1,
                  (root_rank, int(priority)), dtype, count, blocking=blocking)


def sharded_async_inplace(kind, tensor, name, priority=0):
    """Starts a reduce-scatter (`kind` "reduce_scatter": this worker's shard
    of `tensor` becomes the shard's sum) or an allgather ("allgather": every
    worker's shard of `tensor` lands in that shard everywhere) through the
    servers, in place (C API 1.4). `tensor` holds size() equal shards along
    its flattened elements; CPU memory only (no device form yet). An
    allgather of a dtype Caravan cannot sum travels as bytes."""
    what = "%s of tensor '%s'" % (kind, name)
    _check_tensor(tensor, what, name)
    _require_init(what)
    if tensor.is_cuda:
        raise UnsupportedTensorError("%s: CUDA tensors are not sharded through the servers yet; "
                                     "use push_pull or broadcast" % what)
    dtype, count = _CARAVAN_DTYPES.get(tensor.dtype), None
    if dtype is None and kind == "allgather":
        dtype, count = _capi.UINT8, tensor.numel() * tensor.element_size()
    elif dtype is None:
        dtype = _caravan_dtype(tensor, what, name)  # raises, naming the dtype
    return _start("caravan_%s_async" % kind, tensor, name, what, True, 1, (int(priority),),
                  dtype, count)


def alltoall_async_into(send, recv, name, priority=0):
    """Starts an all-to-all through the servers (C API 1.7): block p of
    `send` (size() equal blocks of its bytes) goes to worker p alone, and
    block r of `recv` (as many bytes) comes from worker r. Both contiguous,
    apart, in CPU memory (no device form yet); any dtype, as bytes."""
    what = "alltoall of tensor '%s'" % name
    _check_tensor(recv, what, name)
    _require_init(what)
    if send.is_cuda or recv.is_cuda:
        raise UnsupportedTensorError("%s: CUDA tensors have no all-to-all through the servers "
                                     "yet; use broadcast" % what)
    nbytes = recv.numel() * recv.element_size()
    if not (send.is_contiguous() and recv.is_contiguous()) or \
            send.numel() * send.element_size() != nbytes:
        raise ValueError("%s: send and recv must be contiguous and of the same size in bytes "
                         "(%d and %d)" % (what, send.numel() * send.element_size(), nbytes))
    handle = Handle(name, what, recv, recv, None, 1)
    handle._send = send  # read by the engine until the handle is done
    if nbytes == 0:
        handle._done = True
        return handle
    handle._c = _capi.start("caravan_alltoall_async", name.encode("utf-8"), send.data_ptr(),
                            recv.data_ptr(), nbytes, _capi.UINT8, int(priority), what=what,
                            tensor_name=name)
    with _session.lock:
        _session.in_flight.add(handle)
    return handle


def broadcast_async(tensor, root_rank, name=None, priority=0):
    """Starts copying worker `root_rank`'s `tensor` to every worker, into a
    new tensor; returns a handle. Every worker calls it with the same name
    and shape. Any dtype: those Caravan cannot sum travel as bytes."""
    return _broadcast_start(tensor, root_rank, name, priority, inplace=False)


def broadcast_async_inplace(tensor, root_rank, name=None, priority=0):
    """As broadcast_async(), writing into `tensor` on the other workers."""
    return _broadcast_start(tensor, root_rank, name, priority, inplace=True)


def broadcast(tensor, root_rank, name=None, priority=0):
    """Returns worker `root_rank`'s `tensor` as a new tensor, on every worker."""
    return synchronize(_broadcast_start(tensor, root_rank, name, priority, inplace=False,
                                        blocking=True))


def broadcast_inplace(tensor, root_rank, name=None, priority=0):
    """Overwrites `tensor` with worker `root_rank`'s, in place; returns it."""
    return synchronize(_broadcast_start(tensor, root_rank, name, priority, inplace=True,
                                        blocking=True))


# Horovod's names for the in-place broadcasts.
broadcast_ = broadcast_inplace
broadcast_async_ = broadcast_async_inplace


def _check_handle(handle, what):
    if not isinstance(handle, Handle):
        raise TypeError("%s: expected a handle from an *_async call, got %r" % (what, handle))


def poll(handle):
    """True when the operation is done (synchronize() will not block);
    raises if it failed."""
    _check_handle(handle, "caravan.torch.poll()")
    return handle._poll()


def synchronize(handle):
    """Waits for the operation (without holding the GIL) and returns its
    output: the result tensor (the input itself for the in-place forms),
    averaged if asked. A second call returns the same tensor. None gives
    None back, as BytePS's synchronize() does for a handle it does not hold."""
    if handle is None:
        return None
    _check_handle(handle, "caravan.torch.synchronize()")
    return handle._synchronize()


def _complete(handle):
    """Waits for `handle`'s C handle, releases it and finishes the output
    (average, copy back)."""
    try:
        _capi.wait(handle._c, handle._what, handle.name)
    except CaravanError as e:
        _forget(handle, e)
        raise
    handle._c = None
    with _session.lock:
        _session.in_flight.discard(handle)
    handle._finish()


def _forget(handle, error):
    with _session.lock:
        _session.in_flight.discard(handle)
    handle._fail(error)
