"""Horovod's names in caravan.torch and byteps.torch: allgather, alltoall,
reducescatter (and their _async forms with poll() and synchronize()),
broadcast_, broadcast_async_, is_initialized, each against the result
computed here for every dtype ops_test.py covers, with 1, 2 and 3 workers;
Horovod's shapes (first dimensions that differ per rank, uneven splits, the
reducescatter remainder going to the first ranks); handles waited for in a
different order on different ranks; and the errors, each naming the ranks
and shapes that disagree.
"""
import torch

import byteps.torch as hbps
import caravan.torch as bps
from jobcheck import check, check_equal, check_raises, done

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.uint8, torch.int8]


def values(rank, shape, dtype, seed=0):
    """Rank `rank`'s tensor: small whole numbers every dtype holds exactly
    (and their sums over 3 ranks)."""
    n = 1
    for d in shape:
        n *= d
    v = (torch.arange(n) * 7 + rank * 5 + seed * 3) % 11
    if dtype.is_signed or dtype.is_floating_point:
        v = v - 5
    return v.view(shape).to(dtype)


def before_init():
    check(not bps.is_initialized(), "is_initialized() before init()")
    check_raises(bps.NotInitializedError, lambda: bps.allgather(torch.ones(2), name="early"),
                 "early", "init()")


def allgather(rank, size):
    for dtype in DTYPES + [torch.bool]:
        d = str(dtype)[6:]
        # Rank r has r + 1 rows (rank 0 none in the second round).
        for rows_of in (lambda r: r + 1, lambda r: r):
            mine = values(rank, (rows_of(rank), 3), dtype) if dtype != torch.bool else \
                values(rank, (rows_of(rank), 3), torch.int64) > 0
            want = torch.cat([values(r, (rows_of(r), 3), dtype) if dtype != torch.bool else
                              values(r, (rows_of(r), 3), torch.int64) > 0 for r in range(size)])
            out = bps.allgather(mine, name="ag.%s.%d" % (d, rows_of(1)))
            check_equal(out, want, "allgather %s, rows %s" % (d, [rows_of(r) for r in range(size)]))
        h = bps.allgather_async(values(rank, (2,), dtype), name="ag.async.%s" % d)
        while not bps.poll(h):
            pass
        want = torch.cat([values(r, (2,), dtype) for r in range(size)])
        check_equal(bps.synchronize(h), want, "allgather_async %s" % d)
        check(bps.synchronize(h) is bps.synchronize(h), "synchronize() twice gives the output")
    # Unnamed, and through byteps.torch.
    for i in range(2):
        out = hbps.allgather(torch.full((1, 2), float(rank + i)))
        check_equal(out, torch.tensor([[float(r + i)] * 2 for r in range(size)]),
                    "unnamed allgather %d" % i)


def alltoall(rank, size):
    for dtype in DTYPES:
        d = str(dtype)[6:]
        # Equal parts: rank r sends rows [2p, 2p + 2) to rank p.
        t = values(rank, (2 * size, 2), dtype)
        out = bps.alltoall(t, name="a2a.%s" % d)
        want = torch.cat([values(r, (2 * size, 2), dtype)[2 * rank:2 * rank + 2]
                          for r in range(size)])
        check_equal(out, want, "alltoall %s" % d)
        # Uneven: rank r sends p + r rows to rank p, and keeps one row unsent.
        splits = [p + rank for p in range(size)]
        t = values(rank, (sum(splits) + 1, 3), dtype, seed=1)
        out, received = bps.alltoall(t, splits=splits, name="a2a.splits.%s" % d)
        pieces = []
        for r in range(size):
            theirs = [p + r for p in range(size)]
            start = sum(theirs[:rank])
            pieces.append(values(r, (sum(theirs) + 1, 3), dtype, seed=1)[start:start + rank + r])
        check_equal(out, torch.cat(pieces), "alltoall with splits %s" % d)
        check_equal(received, torch.tensor([rank + r for r in range(size)], dtype=torch.int32),
                    "alltoall's received splits (%s)" % d)
    # Skewed: rank 0 sends all its rows to the last rank, the others nothing
    # (padded blocks would move more than broadcasts: those carry it).
    splits = [0] * size
    if rank == 0:
        splits[size - 1] = 3
    t = values(rank, (3, 2), torch.float32, seed=2)
    out, received = bps.alltoall(t, splits=splits, name="a2a.skewed")
    want = values(0, (3, 2), torch.float32, seed=2) if rank == size - 1 else t[:0]
    check_equal(out, want, "skewed alltoall")
    check_equal(received, torch.tensor([3 if (r == 0 and rank == size - 1) else 0
                                        for r in range(size)], dtype=torch.int32),
                "skewed alltoall's received splits")
    # splits as a tensor: the received splits in its dtype; the async form
    # gives both.
    splits = torch.tensor([1] * size, dtype=torch.int64)
    h = bps.alltoall_async(torch.arange(size, dtype=torch.float32) + 10 * rank, splits=splits,
                           name="a2a.tensor")
    out, received = bps.synchronize(h)
    check_equal(out, torch.tensor([10.0 * r + rank for r in range(size)]), "alltoall_async")
    check_equal(received, torch.ones(size, dtype=torch.int64), "received splits as int64")


def reducescatter(rank, size):
    n = 2 * size + 1  # a remainder: rank 0 gets one row more
    rows = [n // size + (1 if r < n % size else 0) for r in range(size)]
    start = sum(rows[:rank])
    for dtype in DTYPES:
        d = str(dtype)[6:]
        t = values(rank, (n, 2), dtype)
        total = sum(values(r, (n, 2), dtype).long() for r in range(size))
        for op, opname in ((bps.Sum, "sum"), (bps.Average, "average")):
            if op == bps.Sum:
                want = total
            elif dtype.is_floating_point:
                want = total.double() / size
            else:
                want = torch.div(total, size, rounding_mode="floor")
            want = want[start:start + rows[rank]].to(dtype)
            out = bps.reducescatter(t, name="rs.%s.%s" % (d, opname), op=op)
            check_equal(out, want, "reducescatter %s %s (rows %s)" % (opname, d, rows))
            check_equal(t, values(rank, (n, 2), dtype), "reducescatter leaves its input")
        h = bps.reducescatter_async(t, name="rs.async.%s" % d, op=bps.Sum)
        check_equal(bps.synchronize(h), total[start:start + rows[rank]].to(dtype),
                    "reducescatter_async %s" % d)
    # Average is the default, as Horovod's; fp16 on the wire.
    out = bps.reducescatter(torch.full((size, 3), float(rank)), name="rs.default")
    check_equal(out, torch.full((1, 3), (size - 1) / 2), "reducescatter averages by default")
    out = bps.reducescatter(torch.full((size, 3), float(rank)), name="rs.fp16",
                            compression=bps.Compression.fp16, op=bps.Sum)
    check_equal(out, torch.full((1, 3), float(size * (size - 1) // 2)), "reducescatter fp16")


def broadcasts(rank, size):
    for root in range(size):
        t = torch.full((3,), float(rank))
        check(bps.broadcast_(t, root, name="b_.%d" % root) is t, "broadcast_ returns its input")
        check_equal(t, torch.full((3,), float(root)), "broadcast_ from %d" % root)
        t = torch.full((2,), rank, dtype=torch.int64)
        h = bps.broadcast_async_(t, root, name="ba_.%d" % root)
        check(bps.synchronize(h) is t, "broadcast_async_ works in place")
        check_equal(t, torch.full((2,), root, dtype=torch.int64), "broadcast_async_ from %d" %
                    root)
        out = bps.broadcast(torch.full((2,), float(rank)), root, name="b.%d" % root)
        check_equal(out, torch.full((2,), float(root)), "broadcast from %d" % root)


def any_order(rank, size):
    """Ranks start two allgathers in opposite orders and wait for them in
    opposite orders: each goes on as its operations allow (Horovod
    negotiates; here the driver thread takes each forward on its own)."""
    names = ["order.a", "order.b"]
    if rank % 2:
        names.reverse()
    handles = {n: bps.allgather_async(torch.full((rank + 1,), float(len(n) + rank)), name=n)
               for n in names}
    for n in names:
        want = torch.cat([torch.full((r + 1,), float(len(n) + r)) for r in range(size)])
        check_equal(bps.synchronize(handles[n]), want, "allgather %s in any order" % n)


def errors(rank, size):
    check_raises(ValueError, lambda: bps.allgather(torch.tensor(1.0), name="zero.d"), "0-d")
    if size > 1:
        check_raises(ValueError, lambda: bps.alltoall(torch.ones(2 * size + 1), name="odd"),
                     "not a multiple", str(size))
    check_raises(ValueError, lambda: bps.alltoall(torch.ones(4), splits=[1] * (size + 1),
                                                  name="splits.n"), "splits", "one per rank")
    check_raises(ValueError, lambda: bps.alltoall(torch.ones(2), splits=[3] + [0] * (size - 1),
                                                  name="splits.sum"), "splits", "at most")
    check_raises(ValueError, lambda: bps.reducescatter(torch.ones(2), name="rs.op", op=5),
                 "op=5", "Average or Sum")
    check_raises(TypeError, lambda: bps.allgather([1, 2], name="a.list"), "a.list")
    if size == 1:
        return
    last = size - 1
    # Another trailing dimension on the last rank: every rank hears each shape.
    t = torch.ones(2, 4 if rank == last else 3)
    others = "rank 0" if size == 2 else "ranks 0, 1"
    check_raises(bps.MismatchError, lambda: bps.allgather(t, name="ag.mismatch"),
                 "allgather of tensor 'ag.mismatch'", others + ": float32[*, 3]",
                 "rank %d: float32[*, 4]" % last)
    # Another dtype on the last rank.
    t = torch.ones(2 * size, dtype=torch.float64 if rank == last else torch.float32)
    check_raises(bps.MismatchError, lambda: bps.alltoall(t, name="a2a.mismatch"),
                 others + ": float32[*]", "rank %d: float64[*]" % last)
    # reducescatter: another first dimension on the last rank; the servers say so.
    t = torch.ones(2 * size + (1 if rank == last else 0))
    check_raises(bps.MismatchError, lambda: bps.reducescatter(t, name="rs.mismatch"),
                 "rs.mismatch", "different sizes")


def main():
    before_init()
    bps.init()
    check(bps.is_initialized() and hbps.is_initialized(), "is_initialized() after init()")
    rank, size = bps.rank(), bps.size()
    allgather(rank, size)
    alltoall(rank, size)
    reducescatter(rank, size)
    broadcasts(rank, size)
    any_order(rank, size)
    errors(rank, size)
    done(rank, "Horovod's collectives on %d workers" % size)
    bps.shutdown()
    check(not bps.is_initialized(), "is_initialized() after shutdown()")


if __name__ == "__main__":
    main()
