"""Scenario (c), training wrappers: backward_passes_per_step=2,
Compression.fp16 and Horovod's op=Sum in DistributedOptimizer, DistributedDataParallel with
no_sync(), synchronize(), device_ids and buffer broadcast, DistributedOptimizer's ValueErrors, and
DistributedDataParallel refusing BYTEPS_ENABLE_ASYNC.

Each run is checked against one model trained in this process on the
union of every worker's data. DistributedDataParallel broadcasts worker
0's parameters when it wraps, so it needs C API 1.1 (caravan_broadcast).
"""
import os

import torch
from torch import nn

import byteps.torch as bps
from byteps.torch.parallel import DistributedDataParallel
from jobcheck import check, check_equal, check_raises, done

STEPS = 4
HALF = 3  # samples per worker per backward pass


def make_model(seed=7):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))


def data(step, passes, size):
    """passes x (size * HALF) samples: pass k, worker r's slice r."""
    g = torch.Generator().manual_seed(500 + step)
    return [(torch.randn(size * HALF, 5, generator=g), torch.randn(size * HALF, 2, generator=g))
            for _ in range(passes)]


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def reference_run(size, passes, steps=STEPS):
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for step in range(steps):
        optimizer.zero_grad()
        for x, y in data(step, passes, size):
            loss_of(model, x, y).backward()
        optimizer.step()
    return model


def compare(model, reference, what, atol=1e-5):
    for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
        check_equal(p.detach(), ref.detach(), "%s: %s" % (what, name), atol=atol)


def optimizer_runs(rank, size):
    mine = slice(rank * HALF, (rank + 1) * HALF)
    # Two backward passes per step: the push_pulls start in the second; a
    # third before step() is an error.
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=2)
    for k, (x, y) in enumerate(data(0, 2, size)):
        loss_of(model, x[mine], y[mine]).backward()
        check(len(optimizer._in_flight) == (0 if k == 0 else 4),
              "after backward pass %d of 2, %d push_pulls in flight, expected %d" %
              (k + 1, len(optimizer._in_flight), 0 if k == 0 else 4))
    x, y = data(1, 1, size)[0]
    check_raises(AssertionError, lambda: loss_of(model, x[mine], y[mine]).backward(),
                 "backward_passes_per_step=2")
    optimizer.synchronize()  # waits for what the second pass started
    optimizer.set_backward_passes_per_step(1)
    optimizer.zero_grad()
    loss_of(model, x[mine], y[mine]).backward()
    check(len(optimizer._in_flight) == 4, "set_backward_passes_per_step(1): sent at once")
    optimizer.step()
    # Gradients accumulated over two passes, compared with the reference.
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=2)
    for step in range(STEPS):
        optimizer.zero_grad()
        for x, y in data(step, 2, size):
            loss_of(model, x[mine], y[mine]).backward()
        optimizer.step()
    compare(model, reference_run(size, passes=2), "backward_passes_per_step=2")

    # fp16 on the wire: float32 gradients, within float16's precision.
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5),
                                         named_parameters=[(n + ".fp16", p) for n, p in
                                                           model.named_parameters()],
                                         compression=bps.Compression.fp16)
    for step in range(STEPS):
        optimizer.zero_grad()
        x, y = data(step, 1, size)[0]
        loss_of(model, x[mine], y[mine]).backward()
        optimizer.step()
        check(all(p.grad.dtype == torch.float32 for p in model.parameters()),
              "fp16 compression gives float32 gradients back")
    compare(model, reference_run(size, passes=1), "Compression.fp16", atol=1e-2)

    # Horovod's op=Sum: the gradients summed over the workers, not averaged.
    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=[(n + ".sum", p) for n, p in
                                                           model.named_parameters()],
                                         op=bps.Sum)
    x, y = data(0, 1, size)[0]
    loss_of(model, x[mine], y[mine]).backward()
    optimizer.synchronize()
    want = [torch.zeros_like(p) for p in model.parameters()]
    for r in range(size):
        each = make_model()
        theirs = slice(r * HALF, (r + 1) * HALF)
        loss_of(each, x[theirs], y[theirs]).backward()
        for w, p in zip(want, each.parameters()):
            w += p.grad
    for (name, p), w in zip(model.named_parameters(), want):
        check_equal(p.grad, w, "op=Sum: the gradient of %s" % name, atol=1e-5)
    with optimizer.skip_synchronize():
        optimizer.step()

    # ValueErrors.
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    named = list(model.named_parameters())
    check_raises(ValueError, lambda: bps.DistributedOptimizer(
        sgd, named_parameters=[("same", p) for _, p in named]), "duplicate", "same")
    check_raises(ValueError, lambda: bps.DistributedOptimizer(
        sgd, named_parameters=[p for _, p in named]), "tuples")
    check_raises(ValueError, lambda: bps.DistributedOptimizer(
        sgd, named_parameters=named[:2]), "does not name 2")
    check_raises(ValueError, lambda: bps.DistributedOptimizer(
        sgd, named_parameters=named, op=bps.Adasum), "op=Adasum", "Average and Sum")
    for bad in (0, 1.5, "2", True):
        check_raises(ValueError, lambda: bps.DistributedOptimizer(
            sgd, named_parameters=named, backward_passes_per_step=bad), "backward_passes_per_step")
    # Any whole number counts, as BytePS only counts it down.
    for whole in (2.0, torch.tensor(2)):
        kept = bps.DistributedOptimizer(sgd, named_parameters=named,
                                        backward_passes_per_step=whole).backward_passes_per_step
        check(kept == 2 and type(kept) is int, "backward_passes_per_step=%r kept as %r" %
              (whole, kept))
    # Fine-tuning: the first layer frozen and left out of named_parameters, as
    # BytePS allows (only parameters that require gradients are pushed).
    model = make_model()
    for p in model[0].parameters():
        p.requires_grad_(False)
    frozen = [p.detach().clone() for p in model[0].parameters()]
    optimizer = bps.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1),
        named_parameters=[(n, p) for n, p in model.named_parameters() if p.requires_grad])
    x, y = data(0, 1, size)[0]
    loss_of(model, x[mine], y[mine]).backward()
    optimizer.step()
    for p, before in zip(model[0].parameters(), frozen):
        check_equal(p.detach(), before, "a frozen parameter after a step")
    os.environ["BYTEPS_ENABLE_ASYNC"] = "1"
    check_raises(NotImplementedError, lambda: DistributedDataParallel(model), "BYTEPS_ENABLE_ASYNC")
    del os.environ["BYTEPS_ENABLE_ASYNC"]


def sparse_embedding_runs(rank, size):
    """nn.Embedding(sparse=True) yields sparse gradients; as in BytePS, they
    are averaged as dense ones (BytePS presets p.grad dense), and training
    matches one dense model on the union of the data. Two passes a step
    also check that a later sparse gradient accumulates into the dense one."""
    def model_of(sparse):
        torch.manual_seed(11)
        return nn.ModuleDict({"emb": nn.Embedding(10, 4, sparse=sparse), "out": nn.Linear(4, 1)})

    def loss(model, idx, y):
        return ((model["out"](model["emb"](idx)) - y) ** 2).mean()

    def batches(step, passes):
        g = torch.Generator().manual_seed(900 + step)
        return [(torch.randint(0, 10, (size * HALF,), generator=g),
                 torch.randn(size * HALF, 1, generator=g)) for _ in range(passes)]

    mine = slice(rank * HALF, (rank + 1) * HALF)
    reference = model_of(sparse=False)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    model = model_of(sparse=True)
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=2)
    ddp = DistributedDataParallel(model_of(sparse=True))
    ddp_opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        ref_opt.zero_grad()
        optimizer.zero_grad()
        ddp_opt.zero_grad()
        for idx, y in batches(step, 2):
            loss(reference, idx, y).backward()  # the mean of the workers' slices' means
            loss(model, idx[mine], y[mine]).backward()
        idx, y = batches(step, 1)[0]
        loss(ddp.module, idx[mine], y[mine]).backward()
        ref_opt.step()
        optimizer.step()
        ddp_opt.step()
    check(not model["emb"].weight.grad.is_sparse, "the embedding's gradient was made dense")
    for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
        check_equal(p.detach(), ref.detach(), "sparse embedding: %s" % name, atol=1e-5)
    check(not ddp.module["emb"].weight.grad.is_sparse, "DDP: the embedding's gradient is dense")


def ddp_runs(rank, size):
    mine = slice(rank * HALF, (rank + 1) * HALF)
    # device_ids, kept as BytePS keeps it: a list of one CUDA device index.
    for given, kept in (([0], [0]), (["cuda:1"], [1]), ((torch.device("cuda", 2),), [2]),
                        (None, None)):
        ids = DistributedDataParallel(make_model(), device_ids=given).device_ids
        check(ids == kept, "device_ids=%r is kept as %r, not %r" % (given, kept, ids))
    for given, fragment in (([0, 1], "exactly one"), ([], "exactly one"), (0, "exactly one"),
                            (["cpu"], "not a CUDA device"), ([1.5], "not a device")):
        check_raises(ValueError, lambda: DistributedDataParallel(make_model(), device_ids=given),
                     "device_ids", fragment)
    ddp_synchronize(rank, size)
    # Every worker starts from other values: wrapping copies worker 0's.
    inner = make_model(seed=7 if rank == 0 else 70 + rank)
    inner.register_buffer("marker", torch.tensor([rank]))
    model = DistributedDataParallel(inner)
    check_equal(inner.marker, torch.tensor([0]), "the buffers, broadcast when wrapping")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    for step in range(STEPS):
        optimizer.zero_grad()
        passes = data(step, 2, size)
        with model.no_sync():
            x, y = passes[0]
            loss_of(model, x[mine], y[mine]).backward()
            check(not model._in_flight, "no push_pull inside no_sync()")
        inner.marker.fill_(rank + 10)
        x, y = passes[1]
        loss_of(model, x[mine], y[mine]).backward()  # averages both passes' gradients
        check(not model._in_flight, "backward returned with every gradient averaged")
        before = [p.grad.clone() for p in model.parameters()]
        model.synchronize()  # BytePS's call after backward: nothing left to wait for
        for p, grad in zip(model.parameters(), before):
            check_equal(p.grad, grad, "a gradient after synchronize()")
        check_equal(inner.marker, torch.tensor([10]), "the buffers, broadcast at each forward")
        optimizer.step()
    compare(model.module, reference_run(size, passes=2), "DistributedDataParallel")


def ddp_synchronize(rank, size):
    """synchronize() averages what backward passes inside no_sync()
    accumulated, as BytePS's does; a second call has nothing to do."""
    mine = slice(rank * HALF, (rank + 1) * HALF)
    model = DistributedDataParallel(make_model())
    reference = make_model()
    for x, y in data(0, 2, size):
        with model.no_sync():
            loss_of(model, x[mine], y[mine]).backward()
        loss_of(reference, x, y).backward()
    model.synchronize()
    for (name, p), ref in zip(model.module.named_parameters(), reference.parameters()):
        check_equal(p.grad, ref.grad, "synchronize() after no_sync(): %s" % name, atol=1e-5)
    averaged = [p.grad.clone() for p in model.parameters()]
    model.synchronize()
    for p, grad in zip(model.parameters(), averaged):
        check_equal(p.grad, grad, "a gradient after a second synchronize()")


def byteps_module_paths():
    """Names BytePS scripts import from its submodules."""
    from byteps.torch.compression import NoneCompressor
    from byteps.torch.ops import Compression, resume, suspend
    from byteps.torch.parallel.distributed import DistributedDataParallel as ddp
    check(ddp is DistributedDataParallel, "byteps.torch.parallel.distributed")
    check(bps.Compression.none is NoneCompressor and Compression is bps.Compression,
          "NoneCompressor and ops.Compression")
    check(bps.byteps_push_pull is bps.push_pull_async_inplace, "bps.byteps_push_pull")
    check(suspend is bps.suspend and resume is bps.resume, "ops.suspend and ops.resume")


def main():
    byteps_module_paths()
    bps.init()
    rank, size = bps.rank(), bps.size()
    optimizer_runs(rank, size)
    sparse_embedding_runs(rank, size)
    ddp_runs(rank, size)
    done(rank, "DistributedOptimizer options and DistributedDataParallel on %d workers" % size)
    bps.shutdown()


if __name__ == "__main__":
    main()
