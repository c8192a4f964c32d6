"""Scenario (c), tensors: push_pull in every form and dtype, and the errors.

Every dtype Caravan and torch share, summed and averaged (integers by floor
division, negative values included); the new-tensor, in-place and
asynchronous forms with poll() and synchronize(); non-contiguous tensors;
0-d and empty tensors; generated names; Compression.fp16; the gradient
through push_pull; byteps.torch.ops' own names; telemetry (get_pushpull_speed, pushpull_stats). Errors, each
naming the tensor: calls before init(), dtypes Caravan cannot sum, a meta
tensor, a name reused with another shape or dtype. (CUDA tensors: cuda_test.py.)
"""
import torch

import caravan.torch as bps
from jobcheck import check, check_equal, check_raises, done

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.uint8, torch.int8]


def contribution(rank, dtype):
    """Rank r's values: v + r for v in -3..3 (0..6 for uint8); every
    dtype holds them and their sums exactly."""
    values = torch.arange(-3, 4) + rank
    if dtype == torch.uint8:
        values = values + 3
    return values.to(dtype)


def expected(size, dtype, average):
    total = sum(contribution(r, dtype).long() for r in range(size))
    if not average:
        return total.to(dtype)
    if dtype.is_floating_point:
        return (total.double() / size).to(dtype)
    return torch.div(total, size, rounding_mode="floor").to(dtype)  # floor: -2.5 -> -3


def before_init():
    t = torch.ones(3)
    check_raises(bps.NotInitializedError, lambda: bps.push_pull(t, name="early.tensor"),
                 "early.tensor", "init()")
    check_raises(bps.NotInitializedError, lambda: bps.push_pull_async_inplace(t, name="early.2"),
                 "early.2")
    check_raises(bps.NotInitializedError, bps.rank, "rank()", "init()")
    check_raises(bps.NotInitializedError, bps.size, "size()")
    check_raises(bps.NotInitializedError,
                 lambda: bps.broadcast_parameters({"w": t}, root_rank=0), "Parameter.w")


def every_dtype(rank, size):
    for dtype in DTYPES:
        for average in (False, True):
            name = "sum.%s.%s" % (str(dtype)[6:], "avg" if average else "sum")
            mine = contribution(rank, dtype)
            out = bps.push_pull(mine, average=average, name=name)
            check_equal(out, expected(size, dtype, average), "push_pull %s" % name)
            check_equal(mine, contribution(rank, dtype), "push_pull leaves its input (%s)" % name)
            # The same name again, in place, then asynchronously.
            t = contribution(rank, dtype)
            check(bps.push_pull_inplace(t, average=average, name=name) is t,
                  "push_pull_inplace returns its input")
            check_equal(t, expected(size, dtype, average), "push_pull_inplace %s" % name)
            h = bps.push_pull_async(contribution(rank, dtype), average=average, name=name)
            while not bps.poll(h):
                pass
            check_equal(bps.synchronize(h), expected(size, dtype, average), "async %s" % name)
            # In place, read once poll() says done, before synchronize():
            # already averaged, as in BytePS.
            t = contribution(rank, dtype)
            h = bps.push_pull_async_inplace(t, average=average, name=name)
            while not bps.poll(h):
                pass
            check_equal(t, expected(size, dtype, average), "in place after poll() %s" % name)
            check(bps.synchronize(h) is t, "synchronize() after poll() returns the tensor")
            check_equal(t, expected(size, dtype, average), "not averaged twice (%s)" % name)
            check(bps.synchronize(h) is bps.synchronize(h), "synchronize() twice gives the output")


def shapes_and_forms(rank, size):
    # In place on a non-contiguous column: only it changes.
    base = torch.arange(12, dtype=torch.float32).view(3, 4) * (rank + 1)
    column = base[:, 2]
    check(not column.is_contiguous(), "a column of a matrix is not contiguous")
    h = bps.push_pull_async_inplace(column, average=False, name="column")
    check(bps.synchronize(h) is column, "synchronize() of an in-place handle returns the input")
    scale = size * (size + 1) / 2
    check_equal(base[:, 2], torch.tensor([2.0, 6.0, 10.0]) * scale, "the summed column")
    check_equal(base[:, 1], torch.tensor([1.0, 5.0, 9.0]) * (rank + 1), "the column beside it")
    # A transposed tensor, into a new tensor with the same shape.
    t = torch.arange(6, dtype=torch.float64).view(2, 3).t() * (rank + 1)
    out = bps.push_pull(t, average=False, name="transposed")
    check_equal(out, torch.arange(6, dtype=torch.float64).view(2, 3).t() * scale, "transposed")
    # 0-d and empty tensors.
    out = bps.push_pull(torch.tensor(float(rank)), name="scalar")
    check_equal(out, torch.tensor((size - 1) / 2), "a 0-d tensor, averaged")
    out = bps.push_pull(torch.zeros(0, 3), name="empty")
    check(out.shape == (0, 3), "an empty tensor comes back empty")
    # Several in flight at once, waited for in reverse order, with priorities.
    handles = [bps.push_pull_async(torch.full((1000,), float(i + rank)), average=False,
                                   name="many.%d" % i, priority=i) for i in range(8)]
    for i, h in reversed(list(enumerate(handles))):
        check_equal(bps.synchronize(h), torch.full((1000,), float(size * i + scale - size)),
                    "many.%d" % i)
    # Unnamed tensors get the same generated names everywhere.
    for i in range(3):
        out = bps.push_pull(torch.full((2,), float(rank * i)), average=False)
        check_equal(out, torch.full((2,), float(i * (scale - size))), "unnamed push_pull %d" % i)
    check(bps.declare("declared.tensor") == 0, "declare() returns 0, as BytePS's")
    bps.push_pull(torch.ones(1), name="declared.tensor")
    # fp16 on the wire, float32 back.
    t = torch.tensor([0.5, 1.25, -2.0, 3.0]) * (rank + 1)
    out = bps.push_pull(t, average=False, name="fp16", compression=bps.Compression.fp16)
    check_equal(out, torch.tensor([0.5, 1.25, -2.0, 3.0]) * scale, "Compression.fp16")
    wire, ctx = bps.Compression.fp16.compress(t)
    check(wire.dtype == torch.float16 and ctx == torch.float32, "fp16 travels as float16")
    # Differentiable: backward averages the gradients too.
    x = torch.full((3,), float(rank + 1), requires_grad=True)
    y = bps.push_pull(x, name="differentiable")
    check(y.requires_grad, "push_pull of a tensor that requires grad is differentiable")
    (y * (rank + 1)).sum().backward()
    check_equal(x.grad, torch.full((3,), (size + 1) / 2), "the gradient through push_pull")


def byteps_ops(rank, size):
    """byteps.torch.ops as BytePS's: synchronize(None) is None; the group
    count of its DistributedDataParallel (byteps_torch_set_num_grads,
    push_pull_group_sync_inplace); BytePSPushPull with its arguments."""
    import byteps.torch.ops as bops
    check(bops.synchronize(None) is None, "synchronize(None) returns None, as BytePS's")
    check(bops.byteps_torch_set_num_grads(3) == 0, "byteps_torch_set_num_grads returns 0")
    positions = []
    for i in range(4):
        t = torch.full((2,), float(rank + i))
        handle, position = bops.push_pull_group_sync_inplace(t, average=False, name="group.%d" % i)
        positions.append(position)
        check(bops.synchronize(handle) is t, "push_pull_group_sync_inplace works in place")
        check_equal(t, torch.full((2,), float(size * (size - 1) / 2 + size * i)), "group.%d" % i)
    check(positions == [1, 2, 3, 1], "group positions %s, expected [1, 2, 3, 1]" % positions)
    x = torch.full((3,), float(rank + 1), requires_grad=True)
    y = bops.BytePSPushPull.apply(x, True, "bytepspushpull", 0, 0)
    check_equal(y.detach(), torch.full((3,), (size + 1) / 2), "BytePSPushPull forward")
    (y * (rank + 1)).sum().backward()
    check_equal(x.grad, torch.full((3,), (size + 1) / 2), "BytePSPushPull backward")


def errors(rank):
    for dtype in (torch.bool, torch.complex64, torch.int16):
        name = "bad.%s" % str(dtype)[6:]
        e = check_raises(bps.UnsupportedTensorError,
                         lambda: bps.push_pull(torch.zeros(3, dtype=dtype), name=name),
                         name, str(dtype))
        check(isinstance(e, TypeError) and e.tensor_name == name, "a TypeError naming %s" % name)
    check_raises(TypeError, lambda: bps.push_pull(torch.zeros(3, device="meta"), name="on.meta"),
                 "on.meta", "meta")
    check_raises(TypeError, lambda: bps.push_pull([1.0, 2.0], name="a.list"), "a.list")
    bps.push_pull(torch.zeros(4), name="fixed")
    e = check_raises(bps.MismatchError, lambda: bps.push_pull(torch.zeros(5), name="fixed"),
                     "fixed", "4", "5")
    check(isinstance(e, ValueError) and e.code == -3, "a ValueError with CARAVAN_ERR_MISMATCH")
    check_raises(ValueError, lambda: bps.push_pull_async(torch.zeros(4, dtype=torch.int32),
                                                         name="fixed"), "fixed", "int32")
    check_raises(TypeError, lambda: bps.synchronize(42), "handle")
    check_raises(TypeError, lambda: bps.push_pull(torch.zeros(1), name=7), "name")
    # elastic_test.py runs suspend() and resume(); here only resume() in the wrong state
    check_raises(bps.CaravanError, lambda: bps.resume(1, 1), "call suspend() first")


def telemetry():
    """get_pushpull_speed() as BytePS returns it, and the per-tensor figures."""
    import time
    before = bps.pushpull_stats("telemetry.t")
    check(before["operations"] == 0, "no push_pull of telemetry.t yet: %s" % before)
    for _ in range(3):
        bps.push_pull(torch.ones(1000), name="telemetry.t")
    t = bps.pushpull_stats("telemetry.t")
    check(t["operations"] == 3 and t["bytes"] == 12000 and 0 < t["p50_us"] <= t["p99_us"],
          "three push_pulls of 4000 bytes: %s" % t)
    ms, speed = bps.get_pushpull_speed()
    check(abs(ms - time.time() * 1000) < 60000 and speed > 0,
          "get_pushpull_speed() = (%s, %s)" % (ms, speed))
    total = bps.pushpull_stats()
    check(total["operations"] >= t["operations"] and total["bytes"] >= t["bytes"],
          "every tensor counts at least telemetry.t's: %s" % total)


def main():
    before_init()
    bps.init()
    bps.init()  # a second call does nothing
    rank, size = bps.rank(), bps.size()
    check(0 <= rank < size, "rank %d of %d" % (rank, size))
    every_dtype(rank, size)
    shapes_and_forms(rank, size)
    telemetry()
    byteps_ops(rank, size)
    errors(rank)
    done(rank, "push_pull on %d workers" % size)
    bps.shutdown()
    bps.shutdown()  # a second time: harmless, as in BytePS
    check_raises(bps.NotInitializedError, lambda: bps.push_pull(torch.ones(1), name="late"),
                 "late")


if __name__ == "__main__":
    main()
