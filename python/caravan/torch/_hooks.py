"""A hook that runs as soon as a parameter's gradient has been accumulated,
and the dense gradient the engine needs."""
import weakref

import torch


def on_gradient_accumulated(param, method):
    """Calls method(param) during backward, right after param.grad received
    this pass's gradient. Returns an object the caller must keep as long as
    the hook should live. `method` is a bound method, held weakly: once its
    object is gone (a DistributedOptimizer replaced by another), the hook
    does nothing.

    torch 2.1+ has Tensor.register_post_accumulate_grad_hook. Older torch
    exposes the same moment as the post-hook of the parameter's gradient
    accumulator (the AccumulateGrad node), reached through the graph of a
    no-op view; the parameter holds that node only weakly, so the caller
    keeps it."""
    weak = weakref.WeakMethod(method)

    def hook(*unused):
        live = weak()
        if live is not None:
            live(param)

    if hasattr(param, "register_post_accumulate_grad_hook"):
        return param.register_post_accumulate_grad_hook(hook)
    with torch.enable_grad():
        accumulator = param.expand_as(param).grad_fn.next_functions[0][0]
    accumulator.register_hook(hook)
    return accumulator


def dense_gradient(param):
    """param.grad as a dense tensor, made dense in place of a sparse one.
    An nn.Embedding(sparse=True) yields sparse gradients, which the engine
    cannot sum; BytePS presets every p.grad to dense zeros, so they are
    added into a dense one and such models train. Here the first sparse
    gradient becomes dense, and later passes accumulate into it."""
    if param.grad is not None and param.grad.is_sparse:
        param.grad = param.grad.to_dense()
    return param.grad
