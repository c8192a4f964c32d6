"""Making every worker start from the root's model, optimizer and objects.

All of these use Caravan's broadcast (caravan_broadcast): the servers relay
the root's bytes to the other workers, which send nothing.
"""
import pickle

import torch

from . import ops


def broadcast_parameters(params, root_rank, prefix="Parameter."):
    """Overwrites every tensor of `params` with worker `root_rank`'s, in
    place. `params` is a state_dict() (a dict, sent in key order) or a
    sequence of (name, tensor) pairs such as named_parameters() (sent in
    its order; bare tensors are named by position). Tensors are named
    prefix + name on the wire."""
    if isinstance(params, dict):
        items = sorted(params.items())
    elif isinstance(params, torch.Tensor) or not hasattr(params, "__iter__"):
        raise ValueError("broadcast_parameters: params must be a state_dict() or a sequence of "
                         "(name, tensor) pairs, not %s" % type(params).__name__)
    else:
        items = [item if isinstance(item, tuple) else (str(i), item)
                 for i, item in enumerate(params)]
    handles = []
    for name, tensor in items:
        if tensor is None:
            continue
        if not isinstance(tensor, torch.Tensor):
            raise ValueError("broadcast_parameters: '%s' is a %s, not a tensor" %
                             (name, type(tensor).__name__))
        handles.append(ops.broadcast_async_inplace(tensor, root_rank, name=prefix + str(name)))
    for handle in handles:
        ops.synchronize(handle)


def broadcast_object(obj, root_rank=0, name=None):
    """Returns worker `root_rank`'s `obj` on every worker (the root gets
    its own object back). The object is pickled: its length is broadcast
    first, then its bytes as uint8. `name` (default: the type's name)
    names the transfer on the wire and must agree across workers."""
    name = "BroadcastObject." + (name or type(obj).__name__)
    is_root = ops.rank() == root_rank
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) if is_root else b""
    length = torch.tensor([len(payload)], dtype=torch.int64)
    ops.broadcast_inplace(length, root_rank, name=name + ".length")
    n = int(length.item())
    data = (torch.frombuffer(bytearray(payload), dtype=torch.uint8) if is_root
            else torch.empty(n, dtype=torch.uint8))
    # One name per length: a name keeps its element count for the whole job.
    ops.broadcast_inplace(data, root_rank, name="%s.bytes.%d" % (name, n))
    if is_root:
        return obj
    return pickle.loads(data.numpy().tobytes())


def _tensor_layout(value, param):
    # Where the state lives, relative to its parameter: optimizers keep most
    # of it beside the parameter (on its GPU) and some on the CPU (Adam's
    # step count, unless capturable), and a worker's copy must follow suit.
    return ("tensor", tuple(value.shape), value.dtype, value.device == param.device)


def _state_device(param, beside_param):
    """Where a worker keeps a state tensor that the root keeps beside its
    parameter (`beside_param`) or on the CPU."""
    return param.device if beside_param else torch.device("cpu")


def _receiving_state(old, shape, dtype, device):
    """The tensor a worker receives the root's state into: its own, written
    in place as BytePS does, when it has the root's shape and dtype and lies
    on `device`; else new zeros there."""
    if (torch.is_tensor(old) and tuple(old.shape) == shape and old.dtype == dtype
            and old.device == device):
        return old
    return torch.zeros(shape, dtype=dtype, device=device)


def broadcast_optimizer_state(optimizer, root_rank, prefix="OptimizerState."):
    """Makes `optimizer` (a torch optimizer or a DistributedOptimizer) on
    every worker a copy of worker `root_rank`'s: the options of each
    parameter group (lr, momentum, ...) and each parameter's state
    (momentum buffers, step counts, ...). State the root has and another
    worker lacks (no step taken there yet) is created; state the root lacks
    is dropped. Every worker's optimizer must have the same parameter
    groups, with the same parameter shapes, in the same order.

    The root's options and the layout of its state go as one pickled object
    (broadcast_object); the state's tensors then go one broadcast each,
    named prefix + "<parameter index>.<key>.<dtype><shape>"."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    is_root = ops.rank() == root_rank
    layout = None
    if is_root:
        layout = {
            "groups": [dict({k: v for k, v in group.items() if k != "params"},
                            **{"params": len(group["params"])})
                       for group in optimizer.param_groups],
            "state": {i: {key: _tensor_layout(v, p) if torch.is_tensor(v) else ("value", v)
                          for key, v in optimizer.state[p].items()}
                      for i, p in enumerate(params) if optimizer.state.get(p)},
        }
    layout = broadcast_object(layout, root_rank, name=prefix + "layout")

    groups = layout["groups"]
    mine = [len(group["params"]) for group in optimizer.param_groups]
    if [g["params"] for g in groups] != mine:
        raise ValueError(
            "broadcast_optimizer_state: this worker's optimizer has parameter groups of %s "
            "parameters, worker %d's of %s" % (mine, root_rank, [g["params"] for g in groups]))
    if not is_root:
        for group, options in zip(optimizer.param_groups, groups):
            group.update({k: v for k, v in options.items() if k != "params"})
        for i, p in enumerate(params):
            if i not in layout["state"]:
                optimizer.state.pop(p, None)
                continue
            current = optimizer.state[p]
            state = {}
            for key, (kind, *rest) in layout["state"][i].items():
                if kind == "value":
                    state[key] = rest[0]
                    continue
                shape, dtype, beside_param = rest
                state[key] = _receiving_state(current.get(key), shape, dtype,
                                              _state_device(p, beside_param))
            optimizer.state[p] = state

    handles = []
    for i, p in enumerate(params):
        for key, (kind, *rest) in sorted(layout["state"].get(i, {}).items()):
            if kind != "tensor":
                continue
            shape, dtype, _ = rest
            name = "%s%d.%s.%s%s" % (prefix, i, key, str(dtype).replace("torch.", ""),
                                     list(shape))
            handles.append(ops.broadcast_async_inplace(optimizer.state[p][key], root_rank,
                                                       name=name))
    for handle in handles:
        ops.synchronize(handle)
