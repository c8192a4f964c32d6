"""Checks for the worker scripts of the PyTorch tests.

Each worker script runs under caravan-launch; a failed check raises, the
worker exits non-zero (without waiting at the shutdown barrier, see
caravan.torch.init) and caravan-launch fails the job naming it.
"""
import sys

import torch


def interpreter():
    """Which interpreter and torch run this worker."""
    return "%s, torch %s" % (sys.executable, torch.__version__)


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def check_equal(actual, expected, what, atol=0.0):
    """Tensors: same dtype and shape, values within atol (exactly by default)."""
    check(isinstance(actual, torch.Tensor), "%s: got %r, not a tensor" % (what, actual))
    check(actual.dtype == expected.dtype, "%s: dtype %s, expected %s" %
          (what, actual.dtype, expected.dtype))
    check(actual.shape == expected.shape, "%s: shape %s, expected %s" %
          (what, tuple(actual.shape), tuple(expected.shape)))
    if atol == 0.0:
        ok = torch.equal(actual, expected)
    else:
        ok = torch.allclose(actual.double(), expected.double(), rtol=0.0, atol=atol)
    if not ok:
        diff = (actual.double() - expected.double()).abs().max().item()
        raise AssertionError("%s: values differ (max |difference| %g, tolerance %g)\n  got      %s\n"
                             "  expected %s" % (what, diff, atol, actual.flatten()[:8],
                                                expected.flatten()[:8]))


def check_raises(kinds, fn, *fragments):
    """fn() must raise one of `kinds` whose message holds every fragment."""
    try:
        fn()
    except kinds as e:
        message = str(e)
        for fragment in fragments:
            check(fragment in message, "the %s message %r does not say %r" %
                  (type(e).__name__, message, fragment))
        return e
    except Exception as e:  # noqa: BLE001 - reported as the wrong kind
        raise AssertionError("expected %s, got %s: %s" % (kinds, type(e).__name__, e)) from e
    raise AssertionError("expected %s, nothing was raised" % (kinds,))


def done(rank, what):
    print("rank %d: %s: all checks passed (%s)" % (rank, what, interpreter()),
          flush=True)


def step_with_reference(model, optimizer, reference, ref_optimizer, loss_of, x, y, rank,
                        local_batch):
    """One data-parallel step: this worker on its shard of the global batch
    (x, y), the reference on all of it."""
    shard = slice(rank * local_batch, (rank + 1) * local_batch)
    optimizer.zero_grad()
    loss_of(model, x[shard], y[shard]).backward()
    optimizer.step()
    ref_optimizer.zero_grad()
    loss_of(reference, x, y).backward()
    ref_optimizer.step()


# The elastic tests' model: a small MLP, and each step's global batch of
# `size` workers' shards of ELASTIC_LOCAL_BATCH rows.
ELASTIC_LOCAL_BATCH = 4
_IN, _HIDDEN, _OUT = 6, 10, 3


def elastic_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(_IN, _HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(_HIDDEN, _OUT))


def elastic_batch(step, size):
    g = torch.Generator().manual_seed(1000 + step)
    return (torch.randn(size * ELASTIC_LOCAL_BATCH, _IN, generator=g),
            torch.randn(size * ELASTIC_LOCAL_BATCH, _OUT, generator=g))


def mse(model, x, y):
    return ((model(x) - y) ** 2).mean()
