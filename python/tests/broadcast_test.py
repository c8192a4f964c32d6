"""Scenario (b): broadcast_parameters, broadcast_optimizer_state, broadcast_object.

The root is the last worker (size() - 1), and every worker starts from
values of its own (seeded by its rank). Each worker rebuilds the root's
values itself from the root's seed and checks it ends with exactly those:
parameters and buffers, the optimizers' options (lr, momentum, betas) and
per-parameter state, which non-roots do not have before (or have for a
parameter the root has no state for; state they have is received into in
place), and pickled objects. One more optimizer step after the broadcast
must then move every worker alike. Where new state goes (beside its
parameter or on the CPU) is checked on the meta device; cuda_test.py
checks it on a GPU.

Also local_rank() and local_size(). Needs C API 1.1 (caravan_broadcast,
caravan_local_rank, caravan_local_size).
"""
import torch
from torch import nn

import caravan.torch as bps
from caravan.torch import functions
from jobcheck import check, check_equal, check_raises, done


def model_for(rank):
    torch.manual_seed(100 + rank)
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    model(torch.randn(8, 4))  # moves BatchNorm's running statistics and count
    return model


def gradients(model, seed):
    g = torch.Generator().manual_seed(seed)
    model.zero_grad()
    model(torch.randn(6, 4, generator=g)).pow(2).mean().backward()


def optimizer_for(kind, rank, root):
    """The optimizer a worker starts with: the root's has taken steps (and
    holds state for every parameter but the last bias), the others' one
    step on their own (state for all) or none."""
    model = model_for(rank)
    if kind == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.5 + rank / 10)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01 * (rank + 1),
                                     betas=(0.8 + rank / 100, 0.99))
    if rank == root:
        for seed in (1, 2):
            gradients(model, seed)
            model[2].bias.grad = None
            optimizer.step()
    elif rank % 2 == 0:
        gradients(model, 7)
        optimizer.step()
    return model, optimizer


def check_same_optimizer(mine, expected, what):
    for i, (group, ref) in enumerate(zip(mine.param_groups, expected.param_groups)):
        for key, value in ref.items():
            if key != "params":
                check(group[key] == value, "%s: param group %d option %s is %r, the root's %r" %
                      (what, i, key, group[key], value))
    params = [p for g in mine.param_groups for p in g["params"]]
    ref_params = [p for g in expected.param_groups for p in g["params"]]
    for i, (p, ref) in enumerate(zip(params, ref_params)):
        state, ref_state = mine.state.get(p, {}), expected.state.get(ref, {})
        check(sorted(state) == sorted(ref_state), "%s: parameter %d has state %s, the root's %s" %
              (what, i, sorted(state), sorted(ref_state)))
        for key, value in ref_state.items():
            if torch.is_tensor(value):
                check_equal(state[key], value, "%s: parameter %d state %s" % (what, i, key))
            else:
                check(state[key] == value, "%s: parameter %d state %s" % (what, i, key))


def state_placement():
    """Where broadcast_optimizer_state puts a state tensor a worker lacks:
    beside its parameter (here on the meta device, standing in for a GPU)
    or on the CPU, as the root keeps it; a worker's own tensor on the right
    device is reused, one on another device is not."""
    param = nn.Parameter(torch.empty(3, device="meta"))
    beside = functions._state_device(param, beside_param=True)
    check(beside == param.device, "state kept beside its parameter goes to %s, not %s" %
          (beside, param.device))
    check(functions._state_device(param, beside_param=False).type == "cpu",
          "state the root keeps on the CPU stays there")
    made = functions._receiving_state(None, (3,), torch.float32, beside)
    check(made.device == param.device and made.shape == (3,), "new state on %s" % made.device)
    own = torch.empty(3, device="meta")
    check(functions._receiving_state(own, (3,), torch.float32, beside) is own,
          "a worker's own state tensor is received into in place")
    moved = functions._receiving_state(torch.zeros(3), (3,), torch.float32, beside)
    check(moved.device == param.device, "a state tensor on the wrong device is replaced on %s, "
          "not kept on %s" % (param.device, moved.device))


def main():
    state_placement()
    bps.init()
    rank, size = bps.rank(), bps.size()
    root = size - 1
    check((bps.local_rank(), bps.local_size()) == (0, 1),
          "local_rank(), local_size() = %s under caravan-launch" %
          ((bps.local_rank(), bps.local_size()),))

    # Parameters and buffers, from a state_dict.
    model, expected = model_for(rank), model_for(root)
    bps.broadcast_parameters(model.state_dict(), root_rank=root)
    for key, value in expected.state_dict().items():
        check_equal(model.state_dict()[key], value, "state_dict entry %s" % key)

    # From named_parameters() (a generator) and from a list of bare tensors.
    model = model_for(rank)
    bps.broadcast_parameters(model.named_parameters(), root_rank=root, prefix="Named.")
    for (name, p), ref in zip(model.named_parameters(), expected.parameters()):
        check_equal(p.detach(), ref.detach(), "named parameter %s" % name)
    check_equal(model[1].running_mean, model_for(rank)[1].running_mean,
                "a buffer not in named_parameters() stays as it was")
    tensors = [torch.full((3,), float(rank)), torch.arange(4) * rank]
    bps.broadcast_parameters(tensors, root_rank=root, prefix="Listed.")
    check_equal(tensors[0], torch.full((3,), float(root)), "bare tensor 0")
    check_equal(tensors[1], torch.arange(4) * root, "bare tensor 1")

    # Non-contiguous tensors, and dtypes Caravan cannot sum (sent as bytes).
    base = torch.arange(12, dtype=torch.float32).view(3, 4) * (rank + 1)
    column = base[:, 1]
    bps.broadcast_inplace(column, root_rank=root, name="column")
    check_equal(base[:, 1], torch.arange(12, dtype=torch.float32).view(3, 4)[:, 1] * (root + 1),
                "a non-contiguous column")
    check_equal(base[:, 0], torch.arange(0, 12, 4, dtype=torch.float32) * (rank + 1),
                "the columns around it")
    for dtype in (torch.bool, torch.int16, torch.complex64):
        t = (torch.arange(5) + rank).to(dtype)
        out = bps.broadcast(t, root_rank=root, name="bytes.%s" % dtype)
        check_equal(out, (torch.arange(5) + root).to(dtype), "a %s tensor" % dtype)
        check_equal(t, (torch.arange(5) + rank).to(dtype), "broadcast() leaves its input")
    check_raises(bps.CaravanError, lambda: bps.broadcast(torch.zeros(2), root_rank=size,
                                                          name="bad.root"), "bad.root")

    # Optimizer state: options and per-parameter state, created where missing.
    for kind in ("sgd", "adam"):
        model, optimizer = optimizer_for(kind, rank, root)
        expected_model, expected_optimizer = optimizer_for(kind, root, root)
        bps.broadcast_parameters(model.state_dict(), root_rank=root, prefix=kind + ".")
        params = [p for g in optimizer.param_groups for p in g["params"]]
        own = {(i, key): v for i, p in enumerate(params)
               for key, v in optimizer.state.get(p, {}).items() if torch.is_tensor(v)}
        bps.broadcast_optimizer_state(optimizer, root_rank=root)
        check_same_optimizer(optimizer, expected_optimizer, kind)
        for (i, key), tensor in own.items():
            if key in optimizer.state.get(params[i], {}):
                check(optimizer.state[params[i]][key] is tensor,
                      "%s: parameter %d state %s was replaced, not received in place" %
                      (kind, i, key))
        gradients(model, 3)
        gradients(expected_model, 3)
        optimizer.step()
        expected_optimizer.step()
        for (name, p), ref in zip(model.named_parameters(), expected_model.parameters()):
            check_equal(p.detach(), ref.detach(), "%s: parameter %s a step after the broadcast" %
                        (kind, name))

    # A DistributedOptimizer's state, as the BytePS examples broadcast it.
    model, inner = optimizer_for("sgd", rank, root)
    optimizer = bps.DistributedOptimizer(inner, named_parameters=model.named_parameters())
    bps.broadcast_optimizer_state(optimizer, root_rank=root)
    check_same_optimizer(optimizer, optimizer_for("sgd", root, root)[1], "DistributedOptimizer")

    # Objects.
    mine = {"rank": rank, "items": list(range(10 * rank)), "tensor": torch.full((2,), rank)}
    got = bps.broadcast_object(mine, root_rank=root)
    check(got["rank"] == root and got["items"] == list(range(10 * root)),
          "broadcast_object gave %r" % (got,))
    check_equal(got["tensor"], torch.full((2,), root), "the tensor in the object")
    check((got is mine) == (rank == root), "the root gets its own object back, the others a copy")
    # Same (default) name, another length; and a name of its own.
    got = bps.broadcast_object({"n": "x" * (rank + 1)}, root_rank=root)
    check(got == {"n": "x" * (root + 1)}, "second broadcast_object gave %r" % (got,))
    got = bps.broadcast_object(("first", rank), root_rank=0, name="from-zero")
    check(got == ("first", 0), "broadcast_object from rank 0 gave %r" % (got,))

    done(rank, "broadcasts from rank %d of %d" % (root, size))
    bps.shutdown()


if __name__ == "__main__":
    main()
