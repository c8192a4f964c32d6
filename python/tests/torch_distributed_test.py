"""The torch.distributed backend "caravan" against gloo, in one job.

Every rank runs this script (under caravan-launch, or with the variables
torchrun sets: tests/torchrun_env.py). The default group is "caravan"; a
gloo group of the same ranks computes the reference of each collective.

    torch_distributed_test.py collectives   every collective, every dtype, vs gloo
    torch_distributed_test.py ddp           DDP training: the same parameters as over gloo
    torch_distributed_test.py scripts       DDP as scripts use it (unused parameters, no_sync,
                                            PowerSGD and fp16 hooks, Join, SyncBatchNorm):
                                            the same parameters as over gloo
    torch_distributed_test.py errors        what is refused, and how it is named
    torch_distributed_test.py timeout       init_process_group(timeout=2 s) bounds a collective
    torch_distributed_test.py mismatch      ranks that pass different shapes or dtypes are named
    torch_distributed_test.py monitored     monitored_barrier names the ranks that did not arrive
    torch_distributed_test.py regrouped     CARAVAN_ELASTIC=1 and rank 1 killed: the others'
                                            collectives raise RegroupedError
Exit 0 when every check passed; each failure is printed first (scripts
prints every check: PASS, FAIL, or SKIP with the reason).
"""
import copy
import datetime
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import caravan.torch.distributed  # noqa: F401  registers "caravan"

failures = []
# Their public names since torch 2.0 (FSDP calls these).
all_gather_into_tensor = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
reduce_scatter_tensor = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base


def check(ok, what):
    if not ok:
        failures.append(what)
        print("rank %d: FAIL %s" % (dist.get_rank(), what), flush=True)


SUMMABLE = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
            torch.int64, torch.uint8, torch.int8]


def sample(rank, dtype, n=37, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g) * 4).round().to(dtype)  # exact sums
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    hi = 3 if dtype in (torch.uint8, torch.int8) else 1000
    return torch.randint(0, hi, (n,), generator=g).to(dtype)


def reference(fn, *tensors, gloo):
    """The same collective on copies, through gloo (which knows fewer dtypes:
    they go through float64 and back)."""
    copies = [t.clone() for t in tensors]
    wide = [c.to(torch.float64) if c.dtype in (torch.float16, torch.bfloat16, torch.uint8,
                                                torch.int8) else c for c in copies]
    fn(*wide, group=gloo)
    return [w.to(c.dtype) for w, c in zip(wide, copies)]


def collectives(rank, size, gloo):
    for dtype in SUMMABLE:
        t = sample(rank, dtype)
        want = reference(dist.all_reduce, t, gloo=gloo)[0]
        dist.all_reduce(t)
        check(torch.equal(t, want), "all_reduce SUM %s" % dtype)
        for op in (dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT):
            # Small values: a product rounded once (gloo, in float64) and
            # step by step (here, in the dtype) must agree exactly.
            t = sample(rank, dtype, seed=2).double().clamp(-2 if dtype.is_signed else 0, 2).to(dtype)
            want = reference(lambda x, group: dist.all_reduce(x, op=op, group=group), t,
                             gloo=gloo)[0]
            dist.all_reduce(t, op=op)
            check(torch.equal(t, want), "all_reduce %s %s" % (op, dtype))
        # Broadcast from each rank, all_gather, all_gather_into_tensor.
        for root in range(size):
            b = sample(rank, dtype, seed=3)
            dist.broadcast(b, root)
            check(torch.equal(b, sample(root, dtype, seed=3)), "broadcast from %d %s" % (root,
                                                                                  dtype))
        outs = [torch.empty(37, dtype=dtype) for _ in range(size)]
        dist.all_gather(outs, sample(rank, dtype, seed=4))
        check(all(torch.equal(o, sample(r, dtype, seed=4)) for r, o in enumerate(outs)),
              "all_gather %s" % dtype)
        flat = torch.empty(37 * size, dtype=dtype)
        all_gather_into_tensor(flat, sample(rank, dtype, seed=5))
        check(torch.equal(flat, torch.cat([sample(r, dtype, seed=5) for r in range(size)])),
              "all_gather_into_tensor %s" % dtype)
        # reduce_scatter_tensor: rank r gets the sum of every rank's part r.
        whole = sample(rank, dtype, n=8 * size, seed=6)
        mine = torch.empty(8, dtype=dtype)
        reduce_scatter_tensor(mine, whole)
        total = sum(sample(r, dtype, n=8 * size, seed=6).to(torch.float64) for r in range(size))
        check(torch.equal(mine, total[8 * rank:8 * (rank + 1)].to(dtype)),
              "reduce_scatter_tensor %s" % dtype)
    # Any dtype can be broadcast (bytes); bool through MAX/MIN as logical or/and.
    b = sample(rank, torch.bool)
    dist.broadcast(b, 0)
    check(torch.equal(b, sample(0, torch.bool)), "broadcast bool")
    c = torch.tensor([1.5 + 2j, -1j]) * (rank + 1)
    dist.broadcast(c, size - 1)
    check(torch.equal(c, torch.tensor([1.5 + 2j, -1j]) * size), "broadcast complex64")
    # AVG where torch has it.
    if hasattr(dist.ReduceOp, "AVG"):
        t = torch.full((5,), float(rank))
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        check(torch.allclose(t, torch.full((5,), (size - 1) / 2)), "all_reduce AVG")
    # reduce_scatter (lists), reduce, gather, scatter, all_to_all(_single).
    inputs = [torch.full((3,), float(rank * 10 + i)) for i in range(size)]
    out = torch.empty(3)
    dist.reduce_scatter(out, inputs)
    check(torch.equal(out, torch.full((3,), float(sum(r * 10 + rank for r in range(size))))),
          "reduce_scatter")
    t = torch.full((4,), float(rank + 1))
    dist.reduce(t, dst=0)
    if rank == 0:
        check(torch.equal(t, torch.full((4,), float(size * (size + 1) // 2))), "reduce")
    g = [torch.empty(2) for _ in range(size)] if rank == 0 else None
    dist.gather(torch.full((2,), float(rank)), g, dst=0)
    if rank == 0:
        check(all(torch.equal(x, torch.full((2,), float(r))) for r, x in enumerate(g)), "gather")
    s = torch.empty(2)
    chunks = [torch.full((2,), float(100 + r)) for r in range(size)] if rank == 0 else None
    dist.scatter(s, chunks, src=0)
    check(torch.equal(s, torch.full((2,), float(100 + rank))), "scatter")
    send = torch.arange(size * 2, dtype=torch.float32) + 100 * rank
    recv = torch.empty(size * 2)
    dist.all_to_all_single(recv, send)
    want = torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + 100 * r
                      for r in range(size)])
    check(torch.equal(recv, want), "all_to_all_single")
    # Uneven splits: rank r sends r + 1 rows to each peer.
    rows_out = [r + 1 for r in range(size)]
    send = torch.cat([torch.full((rank + 1, 2), float(rank * 10 + p)) for p in range(size)])
    recv = torch.empty(sum(rows_out), 2)
    dist.all_to_all_single(recv, send, output_split_sizes=rows_out,
                           input_split_sizes=[rank + 1] * size)
    want = torch.cat([torch.full((r + 1, 2), float(r * 10 + rank)) for r in range(size)])
    check(torch.equal(recv, want), "all_to_all_single with splits")
    for dtype in SUMMABLE + [torch.bool]:
        # Uneven splits in every dtype: rank r sends p + r rows of 3 to rank p.
        rows_in = [p + rank for p in range(size)]
        send = sample(rank, dtype, n=sum(rows_in) * 3, seed=7).view(-1, 3)
        recv = torch.empty(sum(rank + r for r in range(size)), 3, dtype=dtype)
        dist.all_to_all_single(recv, send, output_split_sizes=[rank + r for r in range(size)],
                               input_split_sizes=rows_in)
        want = []
        for r in range(size):
            theirs = sample(r, dtype, n=sum(p + r for p in range(size)) * 3, seed=7).view(-1, 3)
            start = sum(p + r for p in range(rank))
            want.append(theirs[start:start + rank + r])
        check(torch.equal(recv, torch.cat(want)), "all_to_all_single with splits %s" % dtype)
    outs = [torch.empty(1) for _ in range(size)]
    dist.all_to_all(outs, [torch.tensor([float(rank * 10 + p)]) for p in range(size)])
    check(all(o.item() == r * 10 + rank for r, o in enumerate(outs)), "all_to_all")
    # async_op and get_future (what comm hooks chain on).
    t = torch.ones(6)
    work = dist.all_reduce(t, async_op=True)
    got = work.get_future().wait()
    check(torch.equal(got[0], torch.full((6,), float(size))), "async all_reduce future")
    dist.barrier()


def train(model, group, data, steps=5):
    ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for x, y in data[:steps]:
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp(rank, size, gloo):
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    g = torch.Generator().manual_seed(rank)
    data = [(torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)) for _ in range(5)]
    ours = train(copy.deepcopy(base), None, data)
    theirs = train(copy.deepcopy(base), gloo, data)
    worst = max((a - b).abs().max().item() for a, b in zip(ours, theirs))
    check(worst <= 1e-5, "DDP parameters within 1e-5 of gloo's (worst %g)" % worst)
    # A comm hook: fp16 compression of every bucket.
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    model = copy.deepcopy(base)
    ddp_model = nn.parallel.DistributedDataParallel(model)
    ddp_model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x, y = data[0]
    nn.functional.mse_loss(ddp_model(x), y).backward()
    check(all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters()),
          "DDP with fp16_compress_hook")


def named(ok, what):
    """A check of the scripts mode, printed whether it passes or not."""
    check(ok, what)
    if ok:
        print("rank %d: PASS %s" % (dist.get_rank(), what), flush=True)


class Branches(nn.Module):
    """A trunk and head `a`, always used, head `b`, used when forward is
    told to, and (with_never) head `never`, never used."""

    def __init__(self, with_never):
        super().__init__()
        self.trunk, self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 4), nn.Linear(32, 4)
        if with_never:
            self.never = nn.Linear(32, 4)

    def forward(self, x, use_b):
        h = torch.relu(self.trunk(x))
        return self.a(h) + self.b(h) if use_b else self.a(h)


def starts_equal(model, gloo):
    """Whether `model` has rank 0's parameters and buffers (through gloo)."""
    mine = torch.cat([t.detach().reshape(-1).double() for t in model.state_dict().values()])
    rank0s = mine.clone()
    dist.broadcast(rank0s, 0, group=gloo)
    return torch.equal(mine, rank0s)


def same_as_gloo(what, base, run, gloo, tolerance=1e-5):
    """`run(model, group)` trains a copy of `base` over the caravan group
    (group None) and another over gloo: their parameters and buffers must
    end within `tolerance`, and have moved. Returns what each run returned."""
    check(starts_equal(base, gloo), "%s: the ranks start from different parameters" % what)
    models = [copy.deepcopy(base), copy.deepcopy(base)]
    got = [run(models[0], None), run(models[1], gloo)]
    ours, theirs, first = [[t.detach().double() for t in m.state_dict().values()]
                           for m in models + [base]]
    worst = max((a - b).abs().max().item() for a, b in zip(ours, theirs))
    moved = max((a - b).abs().max().item() for a, b in zip(theirs, first))
    named(worst <= tolerance and moved > 1e-3,
          "%s: within %g of gloo's (worst %.3g; moved %.3g)" % (what, tolerance, worst, moved))
    return got


def scripts(rank, size, gloo):
    """DDP as training scripts use it, over caravan and over gloo in the
    same job, from the same parameters on every rank: they must end with
    the same parameters. Each rank has its own data."""
    from torch.distributed.algorithms import Join
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD

    g = torch.Generator().manual_seed(rank)
    data = [(torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)) for _ in range(8)]
    loss = nn.functional.mse_loss

    def sgd(model):
        return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    # 1. find_unused_parameters: head b used by one rank a step, and every
    # (size + 1)th step by none; head never, never used.
    for what, with_never, use_b in (
            ("a head unused on some steps and ranks", False,
             lambda step: step % (size + 1) == rank),
            ("a parameter never used", True, lambda step: True)):
        def unused(model, group):
            ddp = nn.parallel.DistributedDataParallel(model, process_group=group,
                                                      find_unused_parameters=True)
            opt = sgd(model)
            for step, (x, y) in enumerate(data[:6]):
                opt.zero_grad()
                loss(ddp(x, use_b(step)), y).backward()
                opt.step()

        torch.manual_seed(0)
        same_as_gloo("find_unused_parameters=True, " + what, Branches(with_never), unused, gloo)

    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    # 2. Gradient accumulation: two micro-batches a step, the first under no_sync.
    def accumulating(model, group):
        ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
        opt = sgd(model)
        for step in range(4):
            opt.zero_grad()
            (x1, y1), (x2, y2) = data[2 * step], data[2 * step + 1]
            with ddp.no_sync():
                loss(ddp(x1), y1).backward()
            loss(ddp(x2), y2).backward()
            opt.step()

    same_as_gloo("no_sync, two micro-batches a step", base, accumulating, gloo)

    # 3. Comm hooks, each with its own state and the group passed explicitly.
    def hooked(hook, state_of):
        def run(model, group):
            group = group or dist.distributed_c10d._get_default_group()
            state = state_of(group)
            ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
            ddp.register_comm_hook(state, hook)
            opt = sgd(model)
            for x, y in data[:6]:
                opt.zero_grad()
                loss(ddp(x), y).backward()
                opt.step()
            return state
        return run

    def power(group):
        # Compresses from the third step on (the first two are plain all_reduces).
        return powerSGD.PowerSGDState(process_group=group, matrix_approximation_rank=1,
                                      start_powerSGD_iter=2, random_seed=0)

    # (Not batched_powerSGD_hook: torch 1.13's fails an assertion in
    # _orthogonalize once it compresses, whatever the backend.)
    states = same_as_gloo("PowerSGD (powerSGD_hook)", base,
                          hooked(powerSGD.powerSGD_hook, power), gloo)
    rates = [s.compression_stats()[0] for s in states]
    named(all(r > 1 for r in rates), "PowerSGD compressed: %d steps, %s fewer elements "
          "(caravan, gloo)" % (states[0].iter, " and ".join("%.1fx" % r for r in rates)))
    # float16 sums of two ranks round once, in any order; of three, twice,
    # in the order the ranks are added (pushes as they reach the server,
    # gloo's ring in its own order): a float16 rounding apart, which after
    # a few steps is ~5e-5 here, as far as float16 is from float32.
    same_as_gloo("fp16_compress_hook", base,
                 hooked(default_hooks.fp16_compress_hook, lambda group: group), gloo,
                 tolerance=1e-5 if size == 2 else 2 ** -10)

    # 4. Uneven inputs: rank r has 3 + r batches; DDP is the Joinable.
    for divide in (True, False):
        def uneven(model, group):
            ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
            opt = sgd(model)
            with Join([ddp], divide_by_initial_world_size=divide):
                for x, y in data[:3 + rank]:
                    opt.zero_grad()
                    loss(ddp(x), y).backward()
                    opt.step()

        same_as_gloo("Join, 3 to %d batches a rank, divide_by_initial_world_size=%s" %
                     (2 + size, divide), base, uneven, gloo)

    # 5. SyncBatchNorm (convert_sync_batchnorm), where torch runs it on CPU
    # tensors: torch 1.13 runs it on GPUs only, whatever the backend.
    refusals = []
    for group in (None, gloo):
        try:
            nn.SyncBatchNorm(8, process_group=group)(torch.randn(8, 8))
        except (ValueError, RuntimeError) as e:
            refusals.append(str(e))
    if len(refusals) == 2 and refusals[0] == refusals[1]:
        print("rank %d: SKIP SyncBatchNorm: torch %s refuses it on CPU tensors with either "
              "backend: %r" % (rank, torch.__version__, refusals[0]), flush=True)
    elif refusals:
        check(False, "SyncBatchNorm: refused with one backend only: %s" % refusals)
    else:
        def synced(model, group):
            nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group=group)  # in place
            ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
            opt = sgd(model)
            for x, y in data[:4]:
                opt.zero_grad()
                loss(ddp(x), y).backward()
                opt.step()

        torch.manual_seed(0)
        same_as_gloo("SyncBatchNorm", nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8),
                                                    nn.ReLU(), nn.Linear(8, 4)), synced, gloo)
    dist.barrier(group=gloo)


def errors(rank, size, gloo):
    def said(fn, words, what):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - its words are the point
            check(all(w in str(e) for w in words), "%s: said %r" % (what, str(e)))
            return
        check(False, "%s: no error" % what)

    said(lambda: dist.send(torch.ones(1), (rank + 1) % size),
         ["caravan backend: send is not supported", "gloo"], "send")
    said(lambda: dist.new_group(backend="caravan"),
         ["second group of backend 'caravan'", "gloo"], "a second caravan group")
    said(lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool)),
         ["dtype torch.bool"], "all_reduce of bool")
    # Output split sizes on rank 0 that do not match what the others send.
    if rank == 0:
        said(lambda: dist.all_to_all_single(torch.empty(2 * size), torch.ones(size),
                                            output_split_sizes=[2] * size),
             ["all_to_all_single", "receives %s rows" % ([1] * size), "say %s" % ([2] * size)],
             "all_to_all_single with wrong output splits")
    else:
        dist.all_to_all_single(torch.empty(size), torch.ones(size),
                               output_split_sizes=[1] * size)
    dist.barrier()


def mismatch(rank, size, gloo):
    """Ranks that pass different shapes or dtypes to a collective: every
    rank raises within seconds (not at the 60 s timeout), naming each
    rank's shape; the collectives after it work."""
    last = size - 1
    others = "rank 0" if size == 2 else "ranks 0, 1"

    def said(fn, words, what):
        started = time.monotonic()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - its words are the point
            check(all(w in str(e) for w in words), "%s: said %r" % (what, str(e)))
            took = time.monotonic() - started
            check(took < 15, "%s: took %.1f s" % (what, took))
            return
        check(False, "%s: no error" % what)

    said(lambda: dist.all_reduce(torch.ones(5 if rank == last else 4)),
         ["caravan backend: the ranks disagree on collective #",
          others + ": all_reduce SUM of float32[4]", "rank %d: all_reduce SUM of float32[5]" %
          last], "all_reduce of another shape")
    t = torch.ones(3, dtype=torch.float64 if rank == last else torch.float32)
    said(lambda: dist.broadcast(t, 0),
         [others + ": broadcast from 0 of float32[3]",
          "rank %d: broadcast from 0 of float64[3]" % last], "broadcast of another dtype")
    # Another collective altogether (asynchronously: the Work raises).
    if rank == last:
        work = dist.all_gather([torch.empty(2) for _ in range(size)], torch.ones(2),
                               async_op=True)
    else:
        work = dist.all_reduce(torch.ones(2), async_op=True)
    said(work.wait, [others + ": all_reduce SUM of float32[2]",
                     "rank %d: all_gather of float32[2]" % last], "all_gather against all_reduce")
    # The ranks agree again: collectives go on.
    t = torch.full((4,), float(rank))
    dist.all_reduce(t)
    check(torch.equal(t, torch.full((4,), float(size * (size - 1) // 2))),
          "all_reduce after the mismatches")
    dist.barrier(group=gloo)


def monitored(rank, size, gloo):
    """dist.monitored_barrier with the caravan group: passes when every rank
    arrives; otherwise rank 0 names the first rank that did not (every one
    with wait_all_ranks=True) and the ranks that did, and those that come
    late, raise with rank 0's words."""
    short = datetime.timedelta(seconds=2)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    dist.monitored_barrier()  # the group's timeout
    if size == 1:
        return
    absent = [size - 1] if size == 2 else [1, 2]
    for wait_all in (False, True):
        named = absent if wait_all else absent[:1]
        words = "%s failed to pass monitored_barrier in 2000 ms" % (
            "rank %d" % named[0] if len(named) == 1 else
            "ranks " + ", ".join(str(r) for r in named))
        try:
            if rank not in absent:
                dist.monitored_barrier(timeout=short, wait_all_ranks=wait_all)
            dist.barrier(group=gloo)  # the absent ranks come once the others gave up
            if rank in absent:
                dist.monitored_barrier(timeout=short, wait_all_ranks=wait_all)
            check(False, "monitored_barrier (wait_all_ranks=%s) passed" % wait_all)
        except Exception as e:  # noqa: BLE001 - its words are the point
            check(words in str(e) and (rank == 0 or "rank 0 says" in str(e)),
                  "monitored_barrier (wait_all_ranks=%s) said %r" % (wait_all, str(e)))
            if rank not in absent:
                dist.barrier(group=gloo)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    # Other groups are torch's: gloo's own monitored_barrier.
    dist.monitored_barrier(group=gloo, timeout=datetime.timedelta(seconds=30))


def timeout(rank, size, gloo):
    """Rank 0 all_reduces alone: its wait ends at the group's timeout with
    the engine's words, raised from dist.all_reduce."""
    if rank == 0:
        try:
            dist.all_reduce(torch.ones(3))
            check(False, "an all_reduce no other rank joined returned")
        except Exception as e:  # noqa: BLE001 - its words are the point
            check("timed out after 2 s (CARAVAN_OP_TIMEOUT)" in str(e) and "server 0" in str(e),
                  "the timeout said %r" % str(e))
    dist.barrier(group=gloo)


def regrouped(rank, size, gloo):
    """Under caravan-launch --elastic (CARAVAN_ELASTIC=1): rank 1 kills
    itself after a first all_reduce. On the others the next collective
    raises caravan.torch.RegroupedError naming the lost worker, and so does
    every later one (a group's size cannot change: docs/torch-distributed.md);
    the script then ends, and the job with it, cleanly."""
    import os
    import signal

    from caravan.torch import RegroupedError
    t = torch.ones(5)
    dist.all_reduce(t)
    check(t.tolist() == [float(size)] * 5, "the first all_reduce gave %s" % t.tolist())
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    for what in ("all_reduce", "broadcast", "all_reduce(async_op=True).wait()"):
        try:
            if what == "all_reduce":
                dist.all_reduce(torch.ones(5))
            elif what == "broadcast":
                dist.broadcast(torch.ones(5), 0)
            else:
                dist.all_reduce(torch.ones(5), async_op=True).wait()
            check(False, "%s after the loss returned" % what)
        except RegroupedError as e:
            check("lost worker 1 " in str(e) and "CARAVAN_ERR_REGROUPED" in str(e),
                  "%s said %r" % (what, str(e)))


def main():
    mode = sys.argv[1]
    seconds = {"timeout": 2, "mismatch": 10}.get(mode, 60)
    dist.init_process_group("caravan", timeout=datetime.timedelta(seconds=seconds))
    rank, size = dist.get_rank(), dist.get_world_size()
    check(dist.get_backend() == "caravan", "the default group's backend is caravan")
    gloo = dist.new_group(backend="gloo")
    {"collectives": collectives, "ddp": ddp, "scripts": scripts, "errors": errors,
     "timeout": timeout, "mismatch": mismatch, "monitored": monitored,
     "regrouped": regrouped}[mode](rank, size, gloo)
    print("rank %d of %d: %s: %s" % (rank, size, mode,
                                     "%d failures" % len(failures) if failures else "all right"),
          flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
