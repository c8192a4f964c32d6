"""Gradient compression from PyTorch: training converges.

`compression_test.py <compressor>`: every worker trains the same MLP on its
shard of each batch of a fixed regression task, with DistributedOptimizer
and compression_params for that compressor (with error feedback), and,
in the same process, a reference copy of the model without compression on
the union of the shards. After STEPS steps the compressed model's loss on
a held-out set must be within MARGIN of the reference's (stated per
compressor below: compressors that send less converge more slowly, which
error feedback bounds but does not remove), and far below the loss at the
start, so a run that learns nothing fails. Every worker must also hold the
same parameters: they all applied the same decompressed sums.
`compression_test.py api`: declare() and compression_params refusals.
"""
import sys

import torch
from torch import nn

import byteps.torch as bps
from caravan.errors import CaravanError
from jobcheck import check, done, step_with_reference

STEPS = 150
LOCAL_BATCH = 32
IN, HIDDEN, OUT = 64, 128, 8  # the hidden layer's weights: 8192 floats, 32 KB

# compressor: (compression_params, margin: the compressed loss may be at
# most this many times the uncompressed one). Measured with 2 and 3
# workers: 1.00x to 1.03x; the margin leaves room for other shapes, not for
# a compressor that stopped working (which ends several times higher, or
# NaN, as random-k scaled by n/k under error feedback did).
CASES = {
    "onebit": ({"compressor": "onebit", "ef": "vanilla", "scaling": True}, 1.25),
    "topk": ({"compressor": "topk", "k": 0.05, "ef": "vanilla"}, 1.25),
    "randomk": ({"compressor": "randomk", "k": 0.25, "ef": "vanilla", "seed": 3}, 1.25),
    "dithering": ({"compressor": "dithering", "k": 8, "ef": "vanilla"}, 1.1),
    "onebit-momentum": ({"compressor": "onebit", "ef": "vanilla", "scaling": True,
                         "momentum": "nesterov"}, 1.25),
}


def make_model():
    torch.manual_seed(42)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, OUT))


def teacher():
    g = torch.Generator().manual_seed(7)
    return torch.randn(IN, OUT, generator=g) / IN ** 0.5


def batch(seed, n, w):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, IN, generator=g)
    return x, torch.tanh(x @ w) * 2


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def train(case):
    params, margin = CASES[case]
    rank, size = bps.rank(), bps.size()
    w = teacher()
    x_eval, y_eval = batch(99, 1024, w)
    momentum = 0.9 if "momentum" in params else 0.0
    lr = 0.05
    model = make_model()
    optimizer = bps.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum),
        named_parameters=model.named_parameters(), compression_params=params)
    if momentum:
        check(all(g["momentum"] == 0 for g in optimizer.param_groups),
              "with compression momentum the optimizer's own momentum must be 0")
    reference = make_model()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=lr, momentum=momentum)
    with torch.no_grad():
        start = loss_of(model, x_eval, y_eval).item()
    for step in range(STEPS):
        x, y = batch(step, size * LOCAL_BATCH, w)
        step_with_reference(model, optimizer, reference, ref_optimizer, loss_of, x, y, rank,
                            LOCAL_BATCH)
    with torch.no_grad():
        got = loss_of(model, x_eval, y_eval).item()
        want = loss_of(reference, x_eval, y_eval).item()
    print("worker %d, %s: held-out loss %.5f after %d steps, uncompressed %.5f (%.2fx), "
          "at the start %.5f" % (rank, case, got, STEPS, want, got / want, start), flush=True)
    check(got <= margin * want,
          "%s: loss %.5f is more than %.1fx the uncompressed %.5f" % (case, got, margin, want))
    check(got < 0.25 * start, "%s: loss %.5f did not fall well below the start's %.5f"
          % (case, got, start))
    # Every worker applied the same decompressed sums: the same parameters.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    mine = flat.clone()
    bps.broadcast_inplace(flat, root_rank=0, name="compression_test.params")
    check(torch.equal(flat, mine), "worker %d's parameters differ from worker 0's" % rank)


def refusals():
    def refused(kind, fn, needle):
        try:
            fn()
        except kind as e:
            check(needle in str(e), "expected %r in %r" % (needle, str(e)))
            print("refused as expected: %s" % e, flush=True)
            return
        check(False, "no %s raised (wanted one saying %r)" % (kind.__name__, needle))

    refused(CaravanError, lambda: bps.declare("api.a", byteps_compressor_type="nosuch"),
            "libcaravan-compressor-nosuch.so")
    refused(CaravanError, lambda: bps.declare("api.b", byteps_compresor_k=3),
            "byteps_compresor_k='3'")
    model = make_model()
    refused(ValueError, lambda: bps.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
        compression_params={"compressor": "onebit", "partition": "square"}),
        "expected one of linear, natural")
    refused(ValueError, lambda: bps.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
        compression=bps.Compression.fp16, compression_params={"compressor": "onebit"}),
        "compression_params and compression=")
    refused(ValueError, lambda: bps.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.1), named_parameters=model.named_parameters(),
        compression_params={"compressor": "onebit", "momentum": "nesterov"}),
        "give compression_params['mu']")
    bps.declare("api.c", byteps_compressor_type="onebit", byteps_compressor_onebit_scaling=True)
    bps.declare("api.c", byteps_compressor_type="onebit", byteps_compressor_onebit_scaling=True)
    refused(CaravanError, lambda: bps.declare("api.c", byteps_compressor_type="topk",
                                              byteps_compressor_k=2), "now with")


def main():
    bps.init()
    case = sys.argv[1]
    if case == "api":
        refusals()
    else:
        train(case)
    rank = bps.rank()
    bps.shutdown()
    done(rank, "compression " + case)


if __name__ == "__main__":
    main()
