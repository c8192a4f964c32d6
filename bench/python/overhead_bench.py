"""What the Python layer adds to one push_pull of a small tensor.

Run as every worker of a job, with an interpreter that has torch:
  caravan-launch --workers 1 --servers 1 -- /usr/bin/python3 bench/python/overhead_bench.py

In the same job, on the same tensor and name (so the engine, the key and
its server thread are the same), alternating call by call so that drift
and scheduling noise hit every method alike:
  C API   caravan_push_pull() called straight through ctypes on the tensor's
          memory (the C API's own round trip, with the least Python there can be);
  layer   caravan.torch.push_pull_inplace(t, average=False), the whole layer:
          dtype and device checks, name, handle, wait;
  average caravan.torch.push_pull(t) (a new tensor, averaged), what scripts call;
  c10d    with --c10d, torch.distributed.all_reduce(t) through the "caravan"
          backend (init_process_group("caravan") joins the same job): the
          process group's Work, future and completion thread, what DDP users call.
Each figure is the median of many round trips; the overhead is the layer's
median minus the C API's.
"""
import argparse
import ctypes
import statistics
import sys
import time

try:
    import torch
except ImportError as e:
    sys.exit(f"overhead_bench: {sys.executable} cannot import torch ({e}); run it with /usr/bin/python3")

import caravan.torch as bps
from caravan import _capi


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=3000, help="round trips per method")
    ap.add_argument("--c10d", action="store_true",
                    help="also time torch.distributed.all_reduce through the caravan backend")
    args = ap.parse_args()

    bps.init()
    if args.c10d:
        import torch.distributed as dist
        import caravan.torch.distributed  # noqa: F401  registers "caravan", fills env://
        dist.init_process_group("caravan")
    count = args.bytes // 4
    t = torch.ones(count)
    push_pull = _capi.library().function("caravan_push_pull")
    name = b"overhead"
    ptr = ctypes.c_void_p(t.data_ptr())

    def c_api():
        rc = push_pull(name, ptr, count, _capi.FLOAT32, 0)
        if rc != 0:
            _capi.raise_for(rc, "push_pull")

    def layer():
        bps.push_pull_inplace(t, average=False, name="overhead")

    def average():
        bps.push_pull(t, name="overhead")

    methods = [("C API through ctypes", c_api), ("caravan.torch.push_pull_inplace", layer),
               ("caravan.torch.push_pull (average)", average)]
    if args.c10d:
        def c10d():
            dist.all_reduce(t)

        methods.append(("torch.distributed.all_reduce (caravan)", c10d))
    samples = {n: [] for n, _ in methods}
    for n, f in methods:  # warm-up: first use declares each tensor
        for _ in range(20):
            f()
    for _ in range(args.rounds):
        for n, f in methods:
            t0 = time.perf_counter()
            f()
            samples[n].append(time.perf_counter() - t0)
    done = args.rounds
    med = {n: statistics.median(s) * 1e6 for n, s in samples.items()}
    base = med[methods[0][0]]
    if bps.rank() == 0:
        print(f"{args.bytes}-byte float32 tensor, {bps.size()} worker(s), median of {done} round trips each")
        for n, _ in methods:
            print(f"{n:36s} {med[n]:8.1f} us   {med[n] - base:+7.1f} us")
        print(f"Python layer overhead per push_pull: {med[methods[1][0]] - base:.1f} us "
              f"(push_pull with averaging and a new tensor: {med[methods[2][0]] - base:.1f} us)")
        if args.c10d:
            print(f"torch.distributed.all_reduce overhead: {med[methods[3][0]] - base:.1f} us")
    bps.shutdown()


if __name__ == "__main__":
    main()
