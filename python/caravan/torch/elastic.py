"""Elastic training in Horovod's shape (horovod.torch.elastic), for jobs
whose scheduler has CARAVAN_ELASTIC=1: when a worker or a server is lost,
the others go on, redoing the step in flight; nothing is reloaded.

    import caravan.torch as bps                 # or byteps.torch
    from caravan.torch import elastic

    bps.init()
    optimizer = bps.DistributedOptimizer(optimizer, named_parameters=...)
    sampler = elastic.ElasticSampler(dataset)
    state = elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)

    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)

    @elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            # After a regroup the loader runs over this worker's share of
            # the samples not yet processed: batches count from 0 again.
            for batch_idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
                state.sampler.record_batch(batch_idx, batch_size)
                state.batch += 1
                state.commit()
            state.sampler.set_epoch(state.epoch + 1)

    train(state)

How it differs from Horovod's: a step's push_pulls either complete on
every worker or are abandoned on every survivor (RegroupedError), and
optimizer.step() runs only after all of a step's gradients are averaged,
so the model is never partly updated. commit() therefore saves only the
counters and the sampler's position, not the model and optimizer (Horovod
deep-copies both), and is cheap enough to call every step. After a loss
run() restores the counters, rejoins the job (caravan.torch.rejoin) and
sync()s: the model, the optimizer's state and the counters of rank 0 go to
every worker, so all redo the same step from the same parameters, even
when one had applied a step that another's failure left undone. Call
commit() right after optimizer.step(), before anything else that
communicates. docs/elastic.md.
"""
import copy
import functools
import random

import torch

from . import ops
from ..errors import RegroupedError
from .functions import broadcast_object, broadcast_optimizer_state, broadcast_parameters

__all__ = ["State", "ObjectState", "TorchState", "ElasticSampler", "run"]


class State:
    """What a training function keeps across a regroup: commit() saves it,
    restore() goes back to the last commit, sync() makes every worker's
    equal to rank 0's."""

    def __init__(self):
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called (without arguments) after each regroup, before
        sync(): e.g. to scale the learning rate to the new size()."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        self.save()

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError


class ObjectState(State):
    """Counters and other picklable values, as attributes (state.epoch)."""

    def __init__(self, **kwargs):
        super().__init__()
        self._names = list(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        self._saved = {}
        self.save()

    def _values(self):
        return {name: getattr(self, name) for name in self._names}

    def save(self):
        self._saved = copy.deepcopy(self._values())

    def restore(self):
        for name, value in copy.deepcopy(self._saved).items():
            setattr(self, name, value)

    def sync(self):
        values = broadcast_object(self._values(), root_rank=0, name="elastic.ObjectState")
        for name, value in values.items():
            setattr(self, name, value)
        self.save()


class TorchState(ObjectState):
    """A model and an optimizer (either may be None), and counters.
    ElasticSamplers among the keyword arguments keep their position: each
    is saved by commit() and, at sync(), takes every worker's processed
    samples."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model = model
        self.optimizer = optimizer
        self._samplers = {k: v for k, v in kwargs.items() if isinstance(v, ElasticSampler)}
        counters = {k: v for k, v in kwargs.items() if k not in self._samplers}
        for name, sampler in self._samplers.items():
            setattr(self, name, sampler)
        super().__init__(**counters)

    def save(self):
        super().save()
        for sampler in getattr(self, "_samplers", {}).values():
            sampler.save()

    def restore(self):
        super().restore()
        for sampler in self._samplers.values():
            sampler.restore()

    def sync(self):
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0)
        for sampler in self._samplers.values():
            sampler.sync()
        super().sync()


class ElasticSampler(torch.utils.data.Sampler):
    """Horovod's ElasticSampler: this worker's share of the dataset's
    samples not yet processed in this epoch, re-divided among the workers
    after every regroup. record_batch() (or record_indices()) marks samples
    processed; set_epoch() starts the next epoch. The samples of a worker
    that was lost count as processed only as far as the survivors know:
    its last steps' samples may be seen again in that epoch."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed = set()
        self._saved = (0, set())
        self.reset()

    def set_epoch(self, epoch):
        self.epoch = epoch
        self.processed = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks this worker's batch `batch_idx` (of `batch_size` samples,
        counted from the last reset) processed."""
        start = batch_idx * batch_size
        self.record_indices(self.indices[start:start + batch_size])

    def record_indices(self, indices):
        self.processed.update(int(i) for i in indices)

    def save(self):
        self._saved = (self.epoch, set(self.processed))

    def restore(self):
        self.epoch, processed = self._saved
        self.processed = set(processed)

    def sync(self):
        """Every worker's processed samples, and rank 0's epoch; then this
        worker's share of the rest."""
        self.epoch = broadcast_object(self.epoch, root_rank=0, name="elastic.sampler.epoch")
        # int32: a sum of uint8 flags would wrap at 256 workers.
        mask = torch.zeros(len(self.dataset), dtype=torch.int32)
        if self.processed:
            mask[torch.tensor(sorted(self.processed))] = 1
        ops.push_pull_inplace(mask, average=False, name="elastic.sampler.processed")
        self.processed = set(torch.nonzero(mask).flatten().tolist())
        self.save()
        self.reset()

    def reset(self):
        """Divides the samples not processed among the workers now in the
        job, each getting as many (padded by repeating, as
        DistributedSampler does)."""
        self.num_replicas = ops.size() if ops.is_initialized() else 1
        self.rank = ops.rank() if ops.is_initialized() else 0
        remaining = [i for i in range(len(self.dataset)) if i not in self.processed]
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(remaining)
        per = -(-len(remaining) // self.num_replicas) if remaining else 0
        total = per * self.num_replicas
        if remaining and total > len(remaining):
            remaining += remaining[:total - len(remaining)]
        self.indices = remaining[self.rank:total:self.num_replicas]

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


def run(func):
    """Decorates a training function `func(state, ...)`: runs it after a
    sync(), and after each regroup (RegroupedError from any operation)
    restores the state's last commit, rejoins the job, calls the state's
    reset callbacks, syncs and runs it again. A loss while the job
    re-forms or syncs is handled the same way."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        while True:
            try:
                state.sync()
                return func(state, *args, **kwargs)
            except RegroupedError:
                state.restore()
                ops.rejoin()
                for sampler in getattr(state, "_samplers", {}).values():
                    sampler.reset()
                state.on_reset()

    return wrapper
