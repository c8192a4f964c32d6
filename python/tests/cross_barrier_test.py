"""byteps.torch.cross_barrier.CrossBarrier, imported as BytePS's example
does: each parameter is updated as soon as its average arrives, and the
next forward of each layer waits for its own parameters. Training with
SGD (momentum, weight decay, two parameter groups) and Adam must match one
model trained in this process on the union of every worker's data, as
DistributedOptimizer does; so must evaluation right after the last step.
"""
import torch
from torch import nn

import byteps.torch.cross_barrier as bps
from jobcheck import check, check_equal, done

STEPS = 5
HALF = 3  # samples per worker per step


def make_model():
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 2))


def optimizers(model):
    first, rest = list(model[0].parameters()), [p for m in model[1:] for p in m.parameters()]
    return {
        "sgd": torch.optim.SGD([{"params": first, "lr": 0.05},
                                {"params": rest}], lr=0.1, momentum=0.9, weight_decay=1e-3),
        "adam": torch.optim.Adam(model.parameters(), lr=0.01),
    }


def data(step, size):
    g = torch.Generator().manual_seed(700 + step)
    return torch.randn(size * HALF, 6, generator=g), torch.randn(size * HALF, 2, generator=g)


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def train(kind, rank, size):
    mine = slice(rank * HALF, (rank + 1) * HALF)
    model = make_model()
    optimizer = bps.CrossBarrier(model, optimizers(model)[kind],
                                 named_parameters=[("%s.%s" % (kind, n), p)
                                                   for n, p in model.named_parameters()],
                                 compression=bps.Compression.none, num_steps=STEPS)
    bps.broadcast_parameters(model.state_dict(), root_rank=0, prefix="%s.init." % kind)
    bps.broadcast_optimizer_state(optimizer, root_rank=0, prefix="%s.state." % kind)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        x, y = data(step, size)
        loss = loss_of(model, x[mine], y[mine])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    check(not optimizer._in_flight, "%s: every update applied after step %d (num_steps)" %
          (kind, STEPS))

    reference = make_model()
    ref_opt = optimizers(reference)[kind]
    for step in range(STEPS):
        ref_opt.zero_grad()
        loss_of(reference, *data(step, size)).backward()
        ref_opt.step()
    for (name, p), ref in zip(model.named_parameters(), reference.parameters()):
        check_equal(p.detach(), ref.detach(), "CrossBarrier %s: %s" % (kind, name), atol=1e-5)
    x, y = data(STEPS, size)
    check_equal(model(x).detach(), reference(x).detach(), "%s: a forward after training" % kind,
                atol=1e-5)


def overlapped_forward(rank, size):
    """Without num_steps reached, step() returns before every update: the
    forward of each layer still sees its parameters updated."""
    model = make_model()
    optimizer = bps.CrossBarrier(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                 named_parameters=[("overlap." + n, p)
                                                   for n, p in model.named_parameters()])
    reference = make_model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    mine = slice(rank * HALF, (rank + 1) * HALF)
    for step in range(STEPS):
        x, y = data(step, size)
        loss_of(model, x[mine], y[mine]).backward()
        optimizer.step()
        ref_opt.zero_grad()
        loss_of(reference, x, y).backward()
        ref_opt.step()
        x, _ = data(100 + step, size)
        check_equal(model(x).detach(), reference(x).detach(),
                    "the forward right after step %d" % step, atol=1e-5)
    optimizer.synchronize()


def main():
    bps.init()
    rank, size = bps.rank(), bps.size()
    for kind in ("sgd", "adam"):
        train(kind, rank, size)
    overlapped_forward(rank, size)
    done(rank, "CrossBarrier with SGD and Adam on %d workers" % size)
    bps.shutdown()


if __name__ == "__main__":
    main()
