"""A hook that runs as soon as a parameter's gradient has been accumulated."""
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
