"""Scenario (a): data-parallel training with DistributedOptimizer.

Every worker trains the same small MLP (SGD with momentum) on its shard of
each batch; `byteps.torch` averages the gradients. After the run each
worker's parameters must equal, within 1e-5, those of one model trained in
this same process on the union of all shards. Along the way: gradients
start their push_pull from hooks during backward, an explicit
synchronize() with gradient clipping and skip_synchronize(), a parameter
that gets no gradient, and a frozen one. `train_test.py cuda`: the same
on CUDA tensors (model, data and reference on the GPU of the worker's
local rank).
"""
import sys

import torch
from torch import nn

import byteps.torch as bps
import caravan.torch
from jobcheck import check, check_equal, done

STEPS = 8
LOCAL_BATCH = 4
IN, HIDDEN, OUT = 6, 10, 3
CLIP_STEP = 3
DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"


def make_model():
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
                          nn.Linear(HIDDEN, OUT))
    model.unused = nn.Parameter(torch.ones(2))  # in no forward pass: no gradient, anywhere
    model[2].bias.requires_grad_(False)  # frozen
    return model.to(DEVICE)


def global_batch(step, size):
    g = torch.Generator().manual_seed(1000 + step)
    return (torch.randn(size * LOCAL_BATCH, IN, generator=g).to(DEVICE),
            torch.randn(size * LOCAL_BATCH, OUT, generator=g).to(DEVICE))


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def main():
    check(bps.push_pull is caravan.torch.push_pull and bps.DistributedOptimizer is
          caravan.torch.DistributedOptimizer, "byteps.torch must hand out caravan.torch's objects")
    bps.init()
    rank, size = bps.rank(), bps.size()
    if DEVICE == "cuda":
        torch.cuda.set_device(bps.local_rank() % torch.cuda.device_count())

    model = make_model()
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                         named_parameters=model.named_parameters())
    check(isinstance(optimizer, torch.optim.SGD) and type(optimizer) is not torch.optim.SGD,
          "DistributedOptimizer must return an instance of a subclass of SGD, got %s" %
          (type(optimizer).__mro__,))
    reference = make_model()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    with_gradient = [n for n, p in model.named_parameters() if p.requires_grad and n != "unused"]

    for step in range(STEPS):
        x, y = global_batch(step, size)
        shard = slice(rank * LOCAL_BATCH, (rank + 1) * LOCAL_BATCH)
        optimizer.zero_grad()
        loss_of(model, x[shard], y[shard]).backward()
        started = sorted(h.name for h, _ in optimizer._in_flight.values())
        check(started == sorted("Gradient." + n for n in with_gradient),
              "step %d: the push_pulls started during backward were %s, expected every gradient "
              "computed (%s)" % (step, started, with_gradient))
        ref_optimizer.zero_grad()
        loss_of(reference, x, y).backward()
        if step == CLIP_STEP:
            optimizer.synchronize()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            with optimizer.skip_synchronize():
                optimizer.step()
            nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        else:
            optimizer.step()
        ref_optimizer.step()

    for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
        check_equal(p.detach(), ref.detach(), "rank %d, parameter %s after %d steps on %d workers"
                    % (rank, name, STEPS, size), atol=1e-5)
    check_equal(model.unused.detach(), torch.ones(2, device=DEVICE),
                "the parameter without gradient")
    check(all(p.device.type == DEVICE for p in model.parameters()),
          "the parameters stayed on %s" % DEVICE)
    done(rank, "training on %d workers (%s tensors) equals training on the union of their shards"
         % (size, DEVICE))
    bps.shutdown()


if __name__ == "__main__":
    main()
