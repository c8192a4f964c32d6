"""Asynchronous training (BYTEPS_ENABLE_ASYNC=1 on every node) with
DistributedOptimizer.

Every worker starts elsewhere and takes SGD steps on its own data; each
step pushes the parameters' change and takes the servers' store as the new
parameters, the store starting from worker 0's parameters. Whatever the
interleaving, once every worker is done the store must hold worker 0's
starting parameters plus every change of every worker (each worker knows
its own: -lr x its gradients). And each worker's last parameters came from
the store: they differ from the final store by no more than the changes of
the other workers could have added since.

Then the job is suspended and resumed, and after one more step of every
worker the store must be worker 0's parameters at the resume plus those
changes.

Needs C API 1.1 (caravan_broadcast) and BYTEPS_ENABLE_ASYNC=1 everywhere.
"""
import os

import torch
from torch import nn

import byteps.torch as bps
from jobcheck import check, check_equal, done

STEPS = 6
LR = 0.05


def main():
    check(os.environ.get("BYTEPS_ENABLE_ASYNC") == "1", "run with BYTEPS_ENABLE_ASYNC=1")
    bps.init()
    rank, size = bps.rank(), bps.size()
    torch.manual_seed(10 + rank)  # every worker starts elsewhere: worker 0's start wins
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
    torch.manual_seed(10)
    start = [p.detach().clone() for p in nn.Sequential(nn.Linear(4, 6), nn.Tanh(),
                                                       nn.Linear(6, 1)).parameters()]
    optimizer = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=LR),
                                         named_parameters=model.named_parameters())
    g = torch.Generator().manual_seed(300 + rank)
    # Per parameter: the sum of this worker's changes, and of their sizes.
    own = [torch.zeros_like(p, dtype=torch.float64) for p in model.parameters()]
    own_size = [torch.zeros_like(p, dtype=torch.float64) for p in model.parameters()]
    for step in range(STEPS):
        optimizer.zero_grad()
        model(torch.randn(8, 4, generator=g)).pow(2).mean().backward()
        changes = [-LR * p.grad.double() for p in model.parameters()]
        optimizer.step()
        for total, size_total, change in zip(own, own_size, changes):
            total += change
            size_total += change.abs()
        if step == 0 and size == 1:
            for p, s, change in zip(model.parameters(), start, changes):
                check_equal(p.detach().double(), s.double() + change,
                            "one worker: worker 0's start plus its first change", atol=1e-6)

    everyone = [bps.broadcast_object((own, own_size), root_rank=r, name="changes.%d" % r)
                for r in range(size)]
    for i, (name, p) in enumerate(model.named_parameters()):
        store = bps.push_pull(torch.zeros_like(p), average=False, name="AsyncParam." + name)
        expected = start[i].double() + sum(changes[i] for changes, _ in everyone)
        check_equal(store.double(), expected, "the store of %s after every step" % name,
                    atol=1e-5)
        others = sum((sizes[i] for r, (_, sizes) in enumerate(everyone) if r != rank),
                     torch.zeros_like(expected))
        gap = (store.double() - p.detach().double()).abs()
        check(bool((gap <= others + 1e-5).all()),
              "%s: this worker's parameters are further from the final store (%g) than the "
              "other workers' changes explain" % (name, gap.max().item()))
    after_resume(model, optimizer, g, rank, size)
    done(rank, "asynchronous training on %d workers, and after a suspend and resume" % size)
    bps.shutdown()


def after_resume(model, optimizer, g, rank, size):
    """The servers' stores do not outlive a suspend: the first step after
    resume() seeds them again from worker 0's parameters (else a store
    would hold the changes alone, and every worker would take it as its
    parameters)."""
    bps.suspend()
    bps.resume(size, 1)
    seed = bps.broadcast_object([p.detach().clone() for p in model.parameters()], root_rank=0,
                                name="seed after the resume")
    optimizer.zero_grad()
    model(torch.randn(8, 4, generator=g)).pow(2).mean().backward()
    changes = [-LR * p.grad.double() for p in model.parameters()]
    optimizer.step()
    everyone = [bps.broadcast_object(changes, root_rank=r, name="resumed changes.%d" % r)
                for r in range(size)]
    for i, (name, p) in enumerate(model.named_parameters()):
        store = bps.push_pull(torch.zeros_like(p), average=False, name="AsyncParam." + name)
        expected = seed[i].double() + sum(c[i] for c in everyone)
        check_equal(store.double(), expected, "the store of %s after a step since the resume"
                    % name, atol=1e-5)


if __name__ == "__main__":
    main()
