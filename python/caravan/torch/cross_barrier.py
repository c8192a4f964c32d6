"""CrossBarrier: BytePS's optimizer that lets the next forward pass start
before the step is over (the "barrier crossing" of ByteScheduler,
https://dl.acm.org/citation.cfm?id=3359642).

Each gradient's push_pull starts from its hook during backward, as in
DistributedOptimizer. Then, instead of step() waiting for all of them, a
thread of this optimizer waits for each in the order they started, puts
the average into p.grad, updates that one parameter with the wrapped
optimizer's own step (any torch optimizer: the update runs on a view of it
holding only that parameter, sharing its state) and zeroes the gradient.
Every module waits, before its forward, for the updates of its own
parameters, so the next forward pass uses updated parameters while later
layers' push_pulls are still running. step() returns at once (it only
starts the push_pulls of parameters that got no gradient); zero_grad()
does nothing, as the thread zeroes each gradient once applied.

After step() number `num_steps`, and in synchronize(), every update is
waited for; at exit too, so that the last step is not lost.
"""
import atexit
import queue
import threading
import weakref

from .compression import Compression
from .optimizer import _DistributedOptimizer, _whole_count


class _CrossBarrier(_DistributedOptimizer):
    """Mixed in before the wrapped optimizer's own class."""

    def __init__(self, model, optimizer, named_parameters, compression, backward_passes_per_step,
                 compression_params, num_steps):
        self._wrapped_class = optimizer.__class__
        self._pending_lock = threading.Lock()
        self._ready = {}  # id(p) -> Event, set when p's latest update is applied
        self._failure = None
        self._updates = queue.Queue()  # (p, handle, ctx), in the order they started
        self._steps_taken = 0
        # Started since the last step(): the thread may have applied (and
        # dropped from _in_flight) any of them already.
        self._started = set()
        self._final_step = _whole_count(num_steps, "num_steps")
        super().__init__(optimizer, named_parameters, compression, backward_passes_per_step,
                         compression_params)
        if self._async:
            raise NotImplementedError(
                "CrossBarrier: asynchronous training (BYTEPS_ENABLE_ASYNC) is not supported; use "
                "DistributedOptimizer, or unset BYTEPS_ENABLE_ASYNC")
        for p in self._synced:
            self._ready[id(p)] = threading.Event()
            self._ready[id(p)].set()
        # A module's direct parameters: every parameter belongs to one, so
        # each is waited for before the forward that reads it.
        self._forward_hooks = [
            module.register_forward_pre_hook(_WaitForUpdates(self, module))
            for module in model.modules() if next(module.parameters(recurse=False), None) is not None]
        self._thread = threading.Thread(target=self._apply_updates, name="CrossBarrier",
                                        daemon=True)
        self._thread.start()
        me = weakref.ref(self)
        atexit.register(lambda: me() is not None and me()._drain(at_exit=True))

    # ---- the update thread ----

    def _start(self, p):
        handle, ctx = super()._start(p)
        self._started.add(id(p))
        self._ready[id(p)].clear()
        self._updates.put((p, handle, ctx))
        return handle, ctx

    def _apply_updates(self):
        from . import ops
        while True:
            p, handle, ctx = self._updates.get()
            try:
                if self._failure is None:
                    output = self._compression.decompress(ops.synchronize(handle), ctx)
                    if output is not p.grad:
                        p.grad.copy_(output)
                    self._step_one(p)
                    p.grad.zero_()
            except Exception as e:  # noqa: BLE001 -- said by whoever waits next
                self._failure = e
            with self._pending_lock:
                self._in_flight.pop(id(p), None)
                self._passes_left[id(p)] = self.backward_passes_per_step
            self._ready[id(p)].set()

    def _step_one(self, p):
        """The wrapped optimizer's own step, on a view of it that holds only
        `p` (with its group's options) and shares its state."""
        for group in self.param_groups:
            if any(q is p for q in group["params"]):
                view = object.__new__(self._wrapped_class)
                view.__dict__.update(self.__dict__)  # options, hooks and the state itself
                view.param_groups = [dict(group, params=[p])]
                self._wrapped_class.step(view)
                return

    def _wait_for(self, params, what):
        for p in params:
            event = self._ready.get(id(p))
            if event is not None:
                event.wait()
        if self._failure is not None:
            raise RuntimeError("CrossBarrier: a parameter update failed before %s: %s" %
                               (what, self._failure)) from self._failure

    def _drain(self, at_exit=False):
        if self._thread.is_alive() and not (at_exit and self._failure is not None):
            self._wait_for(self._synced, "the end of training")

    # ---- what the training loop calls ----

    def _gradient_accumulated(self, p):
        with self._pending_lock:
            super()._gradient_accumulated(p)

    def step(self, closure=None):
        """Starts the push_pulls of parameters that got no gradient (zeros)
        and returns; the updates are applied as their averages arrive. The
        `num_steps`-th call waits for all of them."""
        loss = closure() if closure is not None else None
        with self._pending_lock:
            for p in self._synced:
                if id(p) not in self._started:
                    self._in_flight[id(p)] = self._start(p)
            self._started.clear()
        self._steps_taken += 1
        if self._steps_taken == self._final_step:
            self._drain()
        elif self._failure is not None:
            self._wait_for([], "step()")
        return loss

    def synchronize(self):
        """Waits until every update started so far is applied."""
        self._drain()

    def zero_grad(self, *args, **kwargs):
        """Nothing to do: each gradient is zeroed once its update is applied."""


class _WaitForUpdates:
    """A forward pre-hook: waits for the updates of the module's own parameters."""

    def __init__(self, optimizer, module):
        self._optimizer = weakref.ref(optimizer)
        self._params = list(module.parameters(recurse=False))

    def __call__(self, module, inputs):
        optimizer = self._optimizer()
        if optimizer is not None:
            optimizer._wait_for(self._params, "the forward of %s" % type(module).__name__)


def CrossBarrier(model, optimizer, named_parameters=None, compression=Compression.none,
                 backward_passes_per_step=1, num_steps=10**6, compression_params=None):
    """Wraps `optimizer` as DistributedOptimizer does, and lets each layer's
    next forward start as soon as its own parameters are updated (module
    docstring). `model`: the module whose forward reads the parameters.
    `num_steps`: after that many step() calls every update is waited for.
    BytePS's signature, with `compression` as its example passes it."""
    cls = type(optimizer.__class__.__name__, (_CrossBarrier, optimizer.__class__), {})
    return cls(model, optimizer, named_parameters, compression, backward_passes_per_step,
               compression_params, num_steps)
