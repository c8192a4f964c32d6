"""CUDA tensors through caravan.torch / byteps.torch (C API 1.2).

Every floating and integer dtype summed and averaged on the GPU, the
values written on a side stream made current just before the call (the
engine must wait for that stream, not for the device); in-place, new-tensor
and asynchronous forms; a non-contiguous column; a tensor of many
partitions; several in flight at once; broadcast of a CUDA tensor and of a
CUDA model's parameters; results staying on the tensor's device; a
compressed tensor (onebit) giving on the GPU exactly what the same values
give from host memory. Run it
where torch sees a GPU (CMake probes first and skips otherwise).
"""
import torch

import byteps.torch as bps
from jobcheck import check, check_equal, done

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]


def contribution(rank, dtype, device, n=7):
    values = (torch.arange(n) % 7 - 3) + rank
    return values.to(device=device, dtype=dtype)


def expected(size, dtype, average, device, n=7):
    total = sum(contribution(r, torch.int64, "cpu", n) for r in range(size))
    if not average:
        out = total.to(dtype)
    elif dtype.is_floating_point:
        out = (total.double() / size).to(dtype)
    else:
        out = torch.div(total, size, rounding_mode="floor").to(dtype)
    return out.to(device)


def every_dtype(rank, size, device):
    side = torch.cuda.Stream(device)
    for dtype in DTYPES:
        for average in (False, True):
            name = "cuda.%s.%s" % (str(dtype)[6:], "avg" if average else "sum")
            with torch.cuda.stream(side):
                # Queued on `side` only: push_pull must start after it.
                torch.cuda._sleep(1000000)
                mine = contribution(rank, dtype, device)
                out = bps.push_pull(mine, average=average, name=name)
            torch.cuda.current_stream(device).wait_stream(side)
            check(out.device == mine.device, "%s: the result is on %s" % (name, out.device))
            check_equal(out, expected(size, dtype, average, device), "push_pull %s" % name)
            t = contribution(rank, dtype, device)
            check(bps.push_pull_inplace(t, average=average, name=name) is t,
                  "push_pull_inplace returns its input")
            check_equal(t, expected(size, dtype, average, device), "in place %s" % name)
            h = bps.push_pull_async(contribution(rank, dtype, device), average=average, name=name)
            while not bps.poll(h):
                pass
            check_equal(bps.synchronize(h), expected(size, dtype, average, device),
                        "async %s" % name)


def shapes_and_forms(rank, size, device):
    base = torch.arange(12, dtype=torch.float32, device=device).view(3, 4) * (rank + 1)
    column = base[:, 2]
    h = bps.push_pull_async_inplace(column, average=False, name="cuda.column")
    check(bps.synchronize(h) is column, "synchronize() of an in-place handle returns the input")
    scale = size * (size + 1) / 2
    check_equal(base[:, 2], torch.tensor([2.0, 6.0, 10.0], device=device) * scale,
                "the summed column")
    check_equal(base[:, 1], torch.tensor([1.0, 5.0, 9.0], device=device) * (rank + 1),
                "the column beside it")
    # Many partitions (40 MB of float32), several tensors in flight.
    n = 10 << 20
    handles = [bps.push_pull_async(contribution(rank + i, torch.float32, device, n),
                                   average=False, name="cuda.big.%d" % i, priority=i)
               for i in range(3)]
    for i, h in reversed(list(enumerate(handles))):
        want = (sum(contribution(r + i, torch.int64, "cpu", n) for r in range(size))
                .to(torch.float32).to(device))
        check_equal(bps.synchronize(h), want, "cuda.big.%d" % i)


def broadcasts(rank, size, device):
    for root in range(size):
        t = torch.full((1000,), float(rank * 10 + 1), device=device)
        out = bps.broadcast(t, root_rank=root, name="cuda.bcast.%d" % root)
        check_equal(out, torch.full((1000,), float(root * 10 + 1), device=device),
                    "broadcast from %d" % root)
    torch.manual_seed(rank)  # a different model on every worker
    model = torch.nn.Linear(5, 3).to(device)
    bps.broadcast_parameters(model.state_dict(), root_rank=0)
    torch.manual_seed(0)
    want = torch.nn.Linear(5, 3).to(device)
    for (name, p), q in zip(model.state_dict().items(), want.state_dict().values()):
        check_equal(p, q, "parameter %s after broadcast_parameters" % name)
    # Optimizer state lands where the root keeps it: beside the parameter on
    # the GPU (exp_avg), on the CPU for Adam's step count, so that the next
    # step runs (it used to land on the CPU whole, and step() failed).
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if rank == 0:
        model(torch.ones(2, 5, device=device)).sum().backward()
        optimizer.step()
    bps.broadcast_optimizer_state(optimizer, root_rank=0)
    for p in model.parameters():
        state = optimizer.state[p]
        check(state["exp_avg"].device == p.device,
              "exp_avg is on %s, its parameter on %s" % (state["exp_avg"].device, p.device))
        if torch.is_tensor(state["step"]):
            check(state["step"].device.type == "cpu", "Adam's step is on %s" % state["step"].device)
    optimizer.zero_grad()
    model(torch.ones(2, 5, device=device)).sum().backward()
    optimizer.step()
    # State a worker has on the GPU already is received into in place.
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.full((2, 5), float(rank + 1), device=device)).sum().backward()
    optimizer.step()
    own = [optimizer.state[p]["momentum_buffer"] for p in model.parameters()]
    bps.broadcast_optimizer_state(optimizer, root_rank=0, prefix="OptimizerState.SGD.")
    for p, buffer in zip(model.parameters(), own):
        check(optimizer.state[p]["momentum_buffer"] is buffer,
              "a momentum buffer on %s was replaced, not received in place" % buffer.device)
    optimizer.step()


def compressed(rank, size, device):
    # Staged device tensors are compressed on the host like host tensors, so
    # both must give the same bits. 4 MiB of float32: two partitions.
    params = dict(byteps_compressor_type="onebit", byteps_compressor_onebit_scaling=True)
    for where in ("dev", "host"):
        bps.declare("cuda.onebit." + where, **params)
    for step in range(2):
        g = torch.Generator().manual_seed(1000 * step + rank)
        values = torch.randn(1 << 20, generator=g)
        on_device = bps.push_pull(values.to(device), average=False, name="cuda.onebit.dev")
        on_host = bps.push_pull(values.clone(), average=False, name="cuda.onebit.host")
        check(on_device.device == device, "the compressed result is on %s" % on_device.device)
        check_equal(on_device.cpu(), on_host, "onebit step %d: device against host memory" % step)
        if size > 1 and bps.local_size() == 1:
            # Through a server: one sign bit and one scale per partition.
            magnitudes = on_host.abs().unique().numel()
            check(magnitudes <= 2, "onebit step %d: %d magnitudes, not one per partition"
                  % (step, magnitudes))


def main():
    bps.init()
    rank, size = bps.rank(), bps.size()
    torch.cuda.set_device(bps.local_rank() % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device())
    every_dtype(rank, size, device)
    shapes_and_forms(rank, size, device)
    broadcasts(rank, size, device)
    compressed(rank, size, device)
    done(rank, "CUDA tensors on %d workers (%s)" % (size, torch.cuda.get_device_name(device)))
    bps.shutdown()


if __name__ == "__main__":
    main()
