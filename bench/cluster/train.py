#!/usr/bin/env python3
"""One training loop, three ways, for bench/cluster/run.sh (workload "mlp").

  train.py --api ddp      torch DistributedDataParallel over gloo: what a
                          PyTorch user runs today (RANK, WORLD_SIZE,
                          MASTER_ADDR, MASTER_PORT set as torchrun sets them)
  train.py --api byteps   byteps.torch's DistributedOptimizer, as a worker
                          of a Caravan job described by DMLC_*
  train.py --api caravan  DistributedDataParallel over init_process_group("caravan"),
                          as a worker of the same kind of job
  train.py --api none     the same steps with no communication (RANK and
                          WORLD_SIZE as for ddp): what the machine spends on
                          computation alone, which run.sh takes off the others

The model is issue 34's: --layers x Linear(--width, --width) with ReLU (6 x
2048 by default: 25.2 M parameters, 100.7 MB of gradients), batch --batch,
SGD, one torch thread per process. Every rank starts from the same
parameters (one seed) and trains on its own data; after the timed steps the
ranks check that their parameters are equal (the sum of squares of each
rank's parameters, compared through the job itself), and exit 1 if not.

Rank 0 prints the line run.sh reads ("cluster-bench result: ..."), with the
median step and the timed steps' wall-clock window. prep_cpu_s is 0: the
computation is not taken off per process, because what it costs depends on
what runs beside it (on a busy 2-core machine the same matrix products took
up to twice the CPU they took alone); run.sh --cpu compares whole-machine
CPU with the --api none run's instead, as issue 34 measures.
"""
import argparse
import os
import statistics
import sys
import time

import torch


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--api", choices=("ddp", "byteps", "caravan", "none"), required=True)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--label", default="mlp")
    return p.parse_args()


def build(args):
    torch.manual_seed(1234)  # every rank the same parameters
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def report(args, size, model, grad_bytes, seconds, start, end):
    med = statistics.median(seconds)
    print("cluster-bench result: system=%s workload=%s workers=%d tensors=%d bytes=%d iters=%d "
          "median_s=%.6f best_s=%.6f MBps=%.2f window_start=%.6f window_end=%.6f prep_cpu_s=0" %
          (args.api, args.label, size, len(list(model.parameters())), grad_bytes, len(seconds),
           med, min(seconds), grad_bytes / med / 1e6, start, end), flush=True)


def main():
    args = parse()
    torch.set_num_threads(1)
    model = build(args)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    if args.api == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, size = dist.get_rank(), dist.get_world_size()
    elif args.api == "none":
        rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    elif args.api == "caravan":
        import caravan.torch.distributed  # noqa: F401  registers the backend
        import torch.distributed as dist
        dist.init_process_group("caravan")
        rank, size = dist.get_rank(), dist.get_world_size()
    else:
        import byteps.torch as bps
        bps.init()
        rank, size = bps.rank(), bps.size()
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    data = torch.randn(args.batch, args.width, generator=gen)
    target = torch.randn(args.batch, args.width, generator=gen)

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if args.api == "byteps":
        opt = bps.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        bps.broadcast_parameters(model.state_dict(), root_rank=0)
        net = model
    elif args.api == "none":
        net = model
    else:
        net = torch.nn.parallel.DistributedDataParallel(model)

    seconds = []  # DistributedOptimizer.step() waits for every gradient's average
    start = 0.0
    for it in range(args.warmup + args.iters):
        if it == args.warmup:
            start = time.time()
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(data), target).backward()
        opt.step()
        if it >= args.warmup:
            seconds.append(time.perf_counter() - t0)
    end = time.time()

    if args.api == "none":  # nothing to compare: each rank trained alone
        if rank == 0:
            report(args, size, model, grad_bytes, seconds, start, end)
        return 0
    # Equal parameters on every rank: the mean of each rank's sum of squares,
    # and of its square, agree only if every rank holds the same value.
    with torch.no_grad():
        s = float(sum((p.double() ** 2).sum() for p in model.parameters()))
    probe = torch.tensor([s, s * s], dtype=torch.float64)
    if args.api == "byteps":
        mean = bps.push_pull(probe, average=True, name="cluster-bench/parameter-check")
    else:
        dist.all_reduce(probe)
        mean = probe / size
    spread = float(mean[1]) - float(mean[0]) ** 2
    if abs(spread) > 1e-9 * max(1.0, s * s) or abs(float(mean[0]) - s) > 1e-6 * max(1.0, s):
        print("train.py: rank %d: parameters differ between ranks (sum of squares %.9g here, "
              "%.9g on average)" % (rank, s, float(mean[0])), file=sys.stderr)
        return 1
    if rank == 0:
        report(args, size, model, grad_bytes, seconds, start, end)
    if args.api == "byteps":
        bps.shutdown()
    else:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
