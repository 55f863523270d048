"""Helpers that start every rank from the same state: parameters,
optimizer state and arbitrary picklable objects."""

import pickle
from typing import Any, Dict, List, Optional, Tuple

import torch

from hvd.common.process_sets import ProcessSet, global_process_set
from hvd.torch.mpi_ops import (allgather, broadcast_, broadcast_async_, rank,
                               synchronize)


def _dumps(obj: Any) -> bytes:
    """`obj` pickled as Horovod does, with cloudpickle (lambdas and local
    functions travel too), else with pickle where it is not installed."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return cloudpickle.dumps(obj)


def _pairs(params: Any) -> List[Tuple[str, torch.Tensor]]:
    if isinstance(params, dict):
        return sorted(params.items())
    if isinstance(params, list):
        pairs = []
        for i, p in enumerate(params):
            if torch.is_tensor(p):  # model.parameters(): named by place
                pairs.append((str(i), p))
            elif isinstance(p, tuple) and len(p) == 2:
                pairs.append(p)
            else:
                raise ValueError("invalid params of type: list of "
                                 f"{type(p).__name__} (give tensors or "
                                 "(name, tensor) pairs, e.g. "
                                 "model.named_parameters())")
        return pairs
    if hasattr(params, "__iter__"):  # a generator of (name, tensor)
        return _pairs(list(params))
    raise ValueError(f"invalid params of type: {type(params).__name__}")


def broadcast_parameters(params: Any, root_rank: int,
                         process_set: ProcessSet = global_process_set) -> None:
    """Copies root_rank's parameters into every rank's, in place.

    ``params``: ``model.state_dict()``, ``model.named_parameters()``, a
    list of (name, tensor) pairs, or a list of tensors (every rank lists
    them in the same order).
    """
    handles = []
    for name, p in _pairs(params):
        if p is None:
            continue
        tensor = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(broadcast_async_(tensor, root_rank,
                                        name="parameters." + name,
                                        process_set=process_set))
    for h in handles:
        synchronize(h)


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """root_rank's `obj` (pickled) on every rank."""
    name = name or type(obj).__name__
    if rank() == root_rank:
        payload = _dumps(obj)
        length = torch.tensor([len(payload)], dtype=torch.int64)
    else:
        payload = b""
        length = torch.zeros(1, dtype=torch.int64)
    broadcast_(length, root_rank, name=name + ".size",
               process_set=process_set)
    data = torch.zeros(int(length[0]), dtype=torch.uint8)
    if rank() == root_rank:
        data.copy_(torch.frombuffer(bytearray(payload), dtype=torch.uint8))
    broadcast_(data, root_rank, name=name + ".data", process_set=process_set)
    if rank() == root_rank:
        return obj
    return pickle.loads(data.numpy().tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Every rank's `obj` (pickled), in rank order."""
    name = name or type(obj).__name__
    payload = _dumps(obj)
    data = torch.frombuffer(bytearray(payload), dtype=torch.uint8)
    sizes = allgather(torch.tensor([len(payload)], dtype=torch.int64),
                      name=name + ".sizes", process_set=process_set)
    gathered = allgather(data, name=name + ".data", process_set=process_set)
    out, at = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(gathered[at:at + n].numpy().tobytes()))
        at += n
    return out


def _sparse_parameters(model: Optional[torch.nn.Module]) -> set:
    """The parameters of `model`'s layers whose gradients are sparse."""
    if model is None:
        return set()
    return {id(p) for m in model.modules()
            if getattr(m, "sparse", False) for p in m.parameters()}


def _create_state(optimizer: torch.optim.Optimizer, params: List[Any],
                  model: Optional[torch.nn.Module]) -> None:
    """An optimizer that has not stepped yet has no buffers: one step with
    zero gradients (sparse ones for `model`'s sparse layers, or all under
    SparseAdam) makes them, and the parameters are put back as they were.

    As in Horovod, every trainable parameter keeps its zero gradient
    afterwards (scripts broadcast or inspect it); the others keep None.
    """
    sparse = _sparse_parameters(model)
    all_sparse = isinstance(optimizer, torch.optim.SparseAdam)
    saved = [(p, p.data.clone()) for p in params]
    for p in params:
        if p.requires_grad:
            zero = torch.zeros_like(p.data)
            p.grad = (zero.to_sparse() if all_sparse or id(p) in sparse
                      else zero)
    # Not the distributed step: nothing to reduce.
    step = getattr(optimizer, "_local_step", optimizer.step)
    step()
    for p, data in saved:
        p.data.copy_(data)


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer,
                              root_rank: int,
                              model: Optional[torch.nn.Module] = None,
                              process_set: ProcessSet = global_process_set
                              ) -> None:
    """Copies root_rank's optimizer state (hyper-parameters and per-parameter
    buffers) into every rank's optimizer.

    An optimizer that has not stepped yet makes its buffers with one step
    of zero gradients; ``model`` names the layers whose gradients are
    sparse (nn.Embedding(sparse=True) under SparseAdam). The root's state
    decides what travels: a buffer another rank lacks (a parameter that
    had no gradient there) is made for it.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    params = [p for group in optimizer.param_groups for p in group["params"]]
    if not optimizer.state:
        _create_state(optimizer, params, model)
    # Scalars (hyper-parameters, step counts) and the root's list of
    # buffers travel pickled; the buffers in place, in the root's order,
    # each under a name every rank derives alike.
    scalars: Dict[str, Any] = {"groups": [], "state": {}, "tensors": []}
    for group in optimizer.param_groups:
        scalars["groups"].append(
            {k: v for k, v in group.items() if k != "params"})
    for i, p in enumerate(params):
        for key, value in sorted(optimizer.state.get(p, {}).items()):
            if torch.is_tensor(value):
                scalars["tensors"].append(
                    (i, key, tuple(value.shape), value.dtype))
            else:
                scalars["state"][(i, key)] = value
    scalars = broadcast_object(scalars, root_rank,
                               name="optimizer.scalars",
                               process_set=process_set)
    for group, options in zip(optimizer.param_groups, scalars["groups"]):
        group.update(options)
    for (i, key), value in scalars["state"].items():
        optimizer.state[params[i]][key] = value
    handles = []
    for i, key, shape, dtype in scalars["tensors"]:
        state = optimizer.state[params[i]]
        value = state.get(key)
        if (not torch.is_tensor(value) or tuple(value.shape) != shape or
                value.dtype != dtype):
            value = state[key] = torch.zeros(shape, dtype=dtype,
                                             device=params[i].device)
        handles.append(broadcast_async_(value, root_rank,
                                        name=f"optimizer.state.{i}.{key}",
                                        process_set=process_set))
    for h in handles:
        synchronize(h)
