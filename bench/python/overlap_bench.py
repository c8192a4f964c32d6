"""How much of push_pull DistributedOptimizer hides behind the backward pass.

Run as every worker of a job, with an interpreter that has torch:
  caravan-launch --workers 2 --servers 1 -- /usr/bin/python3 bench/python/overlap_bench.py

Three measurements of the same training step (torchvision ResNet-18,
synthetic data, CPU), taken one after the other in one job:
  C  compute alone: forward, backward and the optimizer's step, no push_pull;
  M  the same push_pulls alone (every gradient, asynchronously, then waited for);
  S  Caravan's step: DistributedOptimizer, each gradient's push_pull started by
     its hook while backward goes on, step() waiting for what is left.
The hidden share is (C + M - S) / min(C, M): 1 when the shorter of the two is
hidden entirely, 0 when nothing overlaps. Every figure is the median over the
timed steps of rank 0; the ranks run in lock step (each push_pull waits for
every worker).
"""
import argparse
import statistics
import sys
import time

try:
    import torch
    import torchvision
except ImportError as e:  # the interpreter matters: Debian's torch is /usr/bin/python3's
    sys.exit(f"overlap_bench: {sys.executable} cannot import torch/torchvision ({e}); "
             "run it with /usr/bin/python3")

import caravan.torch as bps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--image", type=int, default=112, help="image side in pixels")
    ap.add_argument("--steps", type=int, default=6, help="timed steps per measurement")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    bps.init()
    torch.manual_seed(1)
    model = getattr(torchvision.models, args.model)(num_classes=1000)
    x = torch.randn(args.batch, 3, args.image, args.image)
    y = torch.randint(0, 1000, (args.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()
    params = list(model.named_parameters())
    grad_bytes = sum(p.numel() * p.element_size() for _, p in params)

    def timed(step):
        for _ in range(args.warmup):
            step()
        times = []
        for _ in range(args.steps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    plain = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def compute_step():
        plain.zero_grad()
        loss_fn(model(x), y).backward()
        plain.step()

    C = timed(compute_step)

    def comm_step():
        handles = [bps.push_pull_async_inplace(p.grad, average=True, name="Comm." + n,
                                               priority=-i)
                   for i, (n, p) in enumerate(params)]
        for h in handles:
            bps.synchronize(h)

    M = timed(comm_step)

    opt = bps.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
                                   named_parameters=model.named_parameters())

    def caravan_step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    S = timed(caravan_step)
    hidden = (C + M - S) / min(C, M)
    if bps.rank() == 0:
        print(f"{args.model}, batch {args.batch} x {args.image}x{args.image}, {len(params)} gradients "
              f"({grad_bytes / 1e6:.1f} MB), {bps.size()} workers, {args.threads} torch thread(s) each, "
              f"median of {args.steps} steps")
        print(f"C compute alone        {C * 1e3:9.1f} ms")
        print(f"M push_pulls alone     {M * 1e3:9.1f} ms  ({grad_bytes / M / 1e9:.2f} GB/s per worker)")
        print(f"S Caravan step         {S * 1e3:9.1f} ms  (C + M = {(C + M) * 1e3:.1f} ms)")
        print(f"hidden share (C + M - S) / min(C, M) = {hidden:.2f}")
    bps.shutdown()


if __name__ == "__main__":
    main()
