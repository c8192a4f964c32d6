"""Collectives made of Caravan's two operations, push_pull (a sum through
the servers) and broadcast (the root's bytes, relayed), shared by
caravan.torch's Horovod names (collectives.py: allgather, alltoall,
reducescatter) and the torch.distributed backend (distributed/
process_group.py).

A plan is a generator: it starts operations through a channel, yields the
list of handles it needs finished before it can go on, and returns its
result. Plan() runs it up to its first yield at once, on the caller's
thread, so that every rank starts the first operations in call order; the
rest runs wherever the caller drives it (a blocking finish(), a completion
thread, a polling driver).

A channel names the operations of one call: `channel.broadcast(tensor,
root, part)`, `channel.push_pull(tensor, average, part)` and
`channel.sharded(kind, tensor, part)` (a reduce-scatter or allgather through
the servers) start them in place and return their handles, as does
`channel.alltoall(send, recv, part)` (an all-to-all through the servers); `part` tells the operations of one call
apart ("/meta", "/from2", ...). A name keeps one element count and dtype
for the whole job, so a part whose size may change from call to call
carries its size.

Shapes that ranks must agree on are checked through one push_pull of a
table of int64 descriptions (each rank fills its own row of zeros, the
sum is every row): a disagreement is named with each rank's shape and
dtype rather than waiting for the operation's timeout.
"""
import zlib

import torch

from ..errors import MismatchError
from . import ops

# dtype <-> a number in a shape description (0: unknown to this table).
_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
           torch.int64, torch.uint8, torch.int8, torch.int16, torch.bool, torch.complex64,
           torch.complex128]
_DIMS = 8  # dimensions a description holds; more are summed up in a checksum
_WIDTH = 3 + _DIMS  # dtype, ndim, dims..., checksum of the dimensions beyond _DIMS


class Plan:
    """A collective under way (see the module's words)."""

    def __init__(self, generator):
        self._gen = generator
        self.waiting = []  # handles it waits for before its next step
        self.done = False
        self.result = None
        self._step()  # the first operations start now; a refusal raises here

    def _step(self):
        try:
            self.waiting = self._gen.send(None)
        except StopIteration as e:
            self.done, self.result, self.waiting = True, e.value, []

    def step(self):
        """Waits (without the GIL) for what it waits for, then goes on."""
        for h in self.waiting:
            ops.synchronize(h)
        self._step()

    def step_if_ready(self):
        """Goes on if what it waits for is done; returns whether it did.
        Raises the error of a failed operation."""
        if all(ops.poll(h) for h in self.waiting):
            self.step()
            return True
        return False

    def finish(self):
        while not self.done:
            self.step()
        return self.result


class Started:
    """A collective that is its operations alone (no later step): the
    handles and the result, with Plan's interface, without a generator's
    cost on the way of the commonest collectives."""

    def __init__(self, handles, result):
        self.waiting, self.result, self.done = handles, result, False

    def step(self):
        for h in self.waiting:
            ops.synchronize(h)
        self.waiting, self.done = [], True

    def step_if_ready(self):
        if all(ops.poll(h) for h in self.waiting):
            self.step()
            return True
        return False

    def finish(self):
        if not self.done:
            self.step()
        return self.result


def run(generator):
    """A plan from start to end, on this thread."""
    return Plan(generator).finish()


# ---- shapes ------------------------------------------------------------------


def describe(tensor, extra=()):
    """A row of the description table: dtype, ndim, dims (and `extra`)."""
    dims = list(tensor.shape)
    code = _DTYPES.index(tensor.dtype) + 1 if tensor.dtype in _DTYPES else 0
    rest = zlib.crc32(repr(dims[_DIMS:]).encode()) if len(dims) > _DIMS else 0
    return [code, len(dims)] + (dims + [-1] * _DIMS)[:_DIMS] + [rest] + list(extra)


def shape_text(row, free_first=False):
    """A description row as "float32[4, 5]" ("float32[*, 5]": the first
    dimension free)."""
    code, ndim = row[0], row[1]
    dtype = str(_DTYPES[code - 1])[6:] if 0 < code <= len(_DTYPES) else "dtype#%d" % code
    dims = [str(d) for d in row[2:2 + min(ndim, _DIMS)]] + ["?"] * max(0, ndim - _DIMS)
    if free_first and dims:
        dims[0] = "*"
    return "%s[%s]" % (dtype, ", ".join(dims))


def rank_list(ranks):
    return ("rank %d" % ranks[0]) if len(ranks) == 1 else \
        "ranks " + ", ".join(str(r) for r in ranks)


def check_agree(rows, what, free_first=False, fields=None):
    """Raises MismatchError naming each rank's shape when the ranks'
    descriptions differ (in `fields`, default: dtype and every dimension;
    free_first: every dimension but the first)."""
    def key(row):
        if fields is not None:
            return tuple(row[i] for i in fields)
        return (row[0], row[1], tuple(row[3 if free_first else 2:_WIDTH]))

    groups = {}
    for r, row in enumerate(rows):
        groups.setdefault(key(row), []).append(r)
    if len(groups) == 1:
        return
    said = "; ".join("%s: %s" % (rank_list(ranks), shape_text(rows[ranks[0]], free_first))
                     for ranks in sorted(groups.values()))
    rule = ("the same dtype and the same dimensions but the first" if free_first
            else "the same dtype and shape")
    raise MismatchError("%s: the ranks disagree: %s (every rank must pass %s)" %
                        (what, said, rule))


# ---- plans -------------------------------------------------------------------


def exchange(channel, mine, part="/meta"):
    """Every rank's list of ints `mine` (as long on every rank), by one
    push_pull of a table whose row r rank r fills."""
    table = torch.zeros(channel.size, len(mine), dtype=torch.int64)
    table[channel.rank] = torch.tensor(mine, dtype=torch.int64)
    yield [channel.push_pull(table, False, "%s/%d" % (part, len(mine)))]
    return table.tolist()


def gather_same(channel, outputs, tensor, part=""):
    """outputs[r] <- rank r's `tensor` (the same shape on every rank): one
    broadcast from each rank."""
    handles = []
    for r, out in enumerate(outputs):
        if r == channel.rank:
            out.copy_(tensor)
        handles.append(channel.broadcast(out, r, "%s/from%d" % (part, r)))
    yield handles
    return outputs


REDUCE_LOCALLY = {
    "PRODUCT": lambda a, b: a.mul_(b),
    "MIN": lambda a, b: torch.minimum(a, b, out=a),
    "MAX": lambda a, b: torch.maximum(a, b, out=a),
    "BAND": lambda a, b: a.bitwise_and_(b),
    "BOR": lambda a, b: a.bitwise_or_(b),
    "BXOR": lambda a, b: a.bitwise_xor_(b),
}


def reduce_by_gathering(channel, tensor, op, part=""):
    """`tensor` <- the reduction (REDUCE_LOCALLY[op]) of every rank's: an
    all_gather, then the reduction here (N times the bytes of a sum)."""
    parts = [torch.empty_like(tensor) for _ in range(channel.size)]
    yield from gather_same(channel, parts, tensor, part)
    acc = parts[0].clone()
    for p in parts[1:]:
        REDUCE_LOCALLY[op](acc, p)
    tensor.copy_(acc)
    return tensor


def allgather(channel, tensor, what):
    """Every rank's `tensor` concatenated along the first dimension, which
    may differ from rank to rank (Horovod's allgather): the shapes first
    (one push_pull), then one broadcast from each rank into its rows."""
    if tensor.dim() == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to concatenate along; "
                         "gather tensor.view(1)" % what)
    rows = yield from exchange(channel, describe(tensor))
    check_agree(rows, what, free_first=True)
    counts = [row[2] for row in rows]
    out = torch.empty((sum(counts),) + tuple(tensor.shape[1:]), dtype=tensor.dtype,
                      device=tensor.device)
    handles, start = [], 0
    for r, n in enumerate(counts):
        part = out.narrow(0, start, n)
        if r == channel.rank:
            part.copy_(tensor)
        handles.append(channel.broadcast(part, r, "/from%d/%d" % (r, part.numel())))
        start += n
    yield handles
    return out


def alltoall(channel, tensor, splits, what):
    """Horovod's alltoall: rank r sends rows splits[p] (in order along the
    first dimension) to rank p; returns (what this rank received, in rank
    order, and how many rows from each). `splits` None: the first
    dimension in equal parts. Every rank's splits first (one push_pull);
    then, in host memory, one all-to-all through the servers of blocks as
    large as the largest split (each rank's rows for p reach p alone: a
    point-to-point exchange's bytes when the splits are even), unless
    that padding would move more rows than broadcasts (splits so skewed
    that N blocks hold more than every rank's rows together); else one
    broadcast of each rank's rows to every rank, each keeping its own."""
    n = channel.size
    if tensor.dim() == 0:
        raise ValueError("%s: a 0-d tensor has no first dimension to split" % what)
    first = tensor.size(0)
    if splits is None:
        if first % n:
            raise ValueError("%s: splits not given, and the first dimension (%d) is not a "
                             "multiple of the number of ranks (%d)" % (what, first, n))
        splits = [first // n] * n
    else:
        splits = [int(s) for s in (splits.tolist() if isinstance(splits, torch.Tensor)
                                    else splits)]
        if len(splits) != n:
            raise ValueError("%s: %d splits for %d ranks (one per rank)" % (what, len(splits), n))
        if any(s < 0 for s in splits) or sum(splits) > first:
            raise ValueError("%s: splits %s: each must be >= 0 and together at most the first "
                             "dimension (%d)" % (what, splits, first))
    rows = yield from exchange(channel, describe(tensor, splits))
    check_agree(rows, what, free_first=True)
    trailing = tuple(tensor.shape[1:])
    received = [row[_WIDTH + channel.rank] for row in rows]
    sent = [sum(r[_WIDTH:]) for r in rows]
    block = max(max(row[_WIDTH:]) for row in rows)  # rows; the same on every rank
    # Per rank, N padded blocks against every rank's rows: the same choice everywhere.
    if shardable(tensor) and n * block <= sum(sent):
        pad = any(k < block for k in splits)
        send = (torch.zeros if pad else torch.empty)((n, block) + trailing, dtype=tensor.dtype)
        start = 0
        for p, k in enumerate(splits):
            send[p, :k] = tensor.narrow(0, start, k)
            start += k
        recv = torch.empty_like(send)
        yield [channel.alltoall(send, recv, "/blocks")]
        return torch.cat([recv[r, :received[r]] for r in range(n)]), received
    inputs = []
    for r in range(n):
        if r == channel.rank:
            buf = tensor.narrow(0, 0, sent[r]).contiguous()
        else:
            buf = torch.empty((sent[r],) + trailing, dtype=tensor.dtype, device=tensor.device)
        inputs.append(buf)
    handles = [channel.broadcast(inputs[r], r, "/from%d/%d" % (r, inputs[r].numel()))
               for r in range(n)]
    yield handles
    pieces = []
    for r in range(n):
        theirs = rows[r][_WIDTH:]
        pieces.append(inputs[r].narrow(0, sum(theirs[:channel.rank]), received[r]))
    return torch.cat(pieces), received


def split_rows(first, n):
    """Horovod's reducescatter split of a first dimension of `first` rows
    among n ranks: first // n each, one more for the first first % n."""
    return [first // n + (1 if r < first % n else 0) for r in range(n)]


def shardable(tensor):
    """Whether the servers can reduce-scatter and allgather `tensor` (C API
    1.4): host memory (device tensors have no sharded form yet)."""
    return not tensor.is_cuda


def reduce_scatter(channel, whole, average, counts, part="", shard=True):
    """`whole` (flat, contiguous, this plan's to overwrite) summed over the
    ranks (averaged), rank r keeping elements counts[r] (in order). Equal
    counts in host memory, with `shard`: one reduce-scatter through the
    servers (each rank gets only its part back); otherwise one push_pull of
    the whole tensor. A caller whose ranks may disagree on the counts
    without being told (no exchange of shapes first) passes shard=False:
    ranks that took different ways would wait for each other's keys until
    the timeout, where a push_pull's server names the different sizes."""
    start = sum(counts[:channel.rank])
    mine = whole[start:start + counts[channel.rank]]
    if shard and len(set(counts)) == 1 and shardable(whole):
        yield [channel.sharded("reduce_scatter", whole, part + "/shards")]
        if average and whole.is_floating_point():
            mine.div_(channel.size)
        elif average:
            mine.div_(channel.size, rounding_mode="floor")
        return mine
    yield [channel.push_pull(whole, average, part)]
    return mine


def gather_into(channel, flat, tensor, part=""):
    """`flat` (1-D, contiguous, size() times `tensor`'s elements) <- every
    rank's `tensor` in rank order: one allgather through the servers in host
    memory (each rank sends its part once), else one broadcast from each
    rank."""
    parts = list(flat.chunk(channel.size))
    if not shardable(flat):
        return (yield from gather_same(channel, parts, tensor.reshape(-1), part))
    parts[channel.rank].copy_(tensor.reshape(-1))
    yield [channel.sharded("allgather", flat, part + "/shards")]
    return parts
